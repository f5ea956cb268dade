"""Per-file pass counts from two pytest JUnit XML reports (fabriq's,
libzmq's): FILE FABRIQ_PASSED LIBZMQ_PASSED TESTS, then TOTAL. A missing
report (the run died) counts as no passes."""
import collections
import sys
import xml.etree.ElementTree as ET


def passes(path):
    counts, seen = collections.Counter(), collections.Counter()
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return counts, seen
    for case in root.iter("testcase"):
        name = case.get("classname", "").split(".")
        module = next((p for p in name if p.startswith("test_")), name[0])
        seen[module] += 1
        if not any(c.tag in ("failure", "error", "skipped") for c in case):
            counts[module] += 1
    return counts, seen


fab, fab_seen = passes(sys.argv[1])
lib, lib_seen = passes(sys.argv[2])
totals = [0, 0, 0]
for module in sorted(set(fab_seen) | set(lib_seen)):
    row = [fab[module], lib[module], max(fab_seen[module], lib_seen[module])]
    totals = [a + b for a, b in zip(totals, row)]
    print("%-28s %4d %4d %4d" % (module, *row))
print("%-28s %4d %4d %4d" % ("TOTAL", *totals))
