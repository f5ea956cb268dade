/*
 * fabriq-ofi C shim.
 *
 * Most of libfabric's API (fi_domain, fi_endpoint, fi_send, fi_cq_read,
 * fi_close, ...) is made of `static inline` functions in the headers that
 * jump through the provider's ops tables, so there is no symbol to link
 * against from Rust. This file turns each call fabriq needs into a real
 * exported function with a `fabriq_ofi_` prefix, and adds accessors for the
 * few fields of `struct fi_info` fabriq reads, so the Rust side never has to
 * mirror libfabric's struct layouts. Everything crosses the boundary as
 * opaque pointers, integers and byte buffers.
 *
 * libfabric itself is not linked: `fabriq_ofi_load` opens it with dlopen
 * the first time fabriq needs it. Linking it made every program using
 * fabriq load it, and with it every provider library it depends on, at
 * start-up: Debian's build pulls in libinfinipath, whose constructor
 * sleeps about a thousand times for 125 us, so each process (a tcp-only
 * program, every test binary, every bench worker) started 0.2 s late; a
 * machine without libfabric installed could not start the program at all.
 * The few real symbols fabriq calls (the rest are the inline functions
 * above) are looked up at the symbol versions the linker would have bound
 * when linking against the headers in use (found by build.rs), so a newer
 * library with a grown `struct fi_info` still gives us the layout these
 * headers describe.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_rma.h>

/* ---- loading libfabric ------------------------------------------------ */

static uint32_t (*p_fi_version)(void);
static const char *(*p_fi_strerror)(int);
static int (*p_fi_getinfo)(uint32_t, const char *, const char *, uint64_t,
                           const struct fi_info *, struct fi_info **);
static void (*p_fi_freeinfo)(struct fi_info *);
static struct fi_info *(*p_fi_dupinfo)(const struct fi_info *);
static int (*p_fi_fabric)(struct fi_fabric_attr *, struct fid_fabric **,
                          void *);
static char *(*p_fi_tostr)(const void *, enum fi_type);

/* From here on, fabriq's calls to these go through the pointers. (The
 * headers' one inline user of them, fi_allocinfo, is not called: it would
 * reference fi_dupinfo itself.) */
#define fi_version (*p_fi_version)
#define fi_strerror (*p_fi_strerror)
#define fi_getinfo (*p_fi_getinfo)
#define fi_freeinfo (*p_fi_freeinfo)
#define fi_dupinfo (*p_fi_dupinfo)
#define fi_fabric (*p_fi_fabric)
#define fi_tostr (*p_fi_tostr)

/* Symbol versions, as -D definitions from build.rs; NULL: the default. */
#ifndef FABRIQ_OFI_VER_fi_version
#define FABRIQ_OFI_VER_fi_version NULL
#endif
#ifndef FABRIQ_OFI_VER_fi_strerror
#define FABRIQ_OFI_VER_fi_strerror NULL
#endif
#ifndef FABRIQ_OFI_VER_fi_getinfo
#define FABRIQ_OFI_VER_fi_getinfo NULL
#endif
#ifndef FABRIQ_OFI_VER_fi_freeinfo
#define FABRIQ_OFI_VER_fi_freeinfo NULL
#endif
#ifndef FABRIQ_OFI_VER_fi_dupinfo
#define FABRIQ_OFI_VER_fi_dupinfo NULL
#endif
#ifndef FABRIQ_OFI_VER_fi_fabric
#define FABRIQ_OFI_VER_fi_fabric NULL
#endif
#ifndef FABRIQ_OFI_VER_fi_tostr
#define FABRIQ_OFI_VER_fi_tostr NULL
#endif
/* The directory pkg-config named at build time, tried when the plain
 * name is not found on the loader's path. */
#ifndef FABRIQ_OFI_LIBDIR
#define FABRIQ_OFI_LIBDIR NULL
#endif

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[512];
static const char *library_name = "libfabric.so.1";

static void *find(void *lib, const char *name, const char *version) {
    void *sym = version ? dlvsym(lib, name, version) : dlsym(lib, name);
    if (!sym && !load_error[0])
        snprintf(load_error, sizeof load_error, "%s has no symbol %s%s%s",
                 library_name, name, version ? "@" : "",
                 version ? version : "");
    return sym;
}

#define FIND(lib, name)                                                       \
    (*(void **)&p_##name = find(lib, #name, FABRIQ_OFI_VER_##name))

static void load(void) {
    /* secure_getenv: in a set-user-ID, set-group-ID or capability-gaining
     * program (AT_SECURE) the environment belongs to whoever started it,
     * and must not choose the library loaded into it. */
    const char *name = secure_getenv("FABRIQ_OFI_LIBRARY");
    if (name && *name)
        library_name = name;
    void *lib = dlopen(library_name, RTLD_NOW | RTLD_LOCAL);
    if (!lib && !(name && *name) && FABRIQ_OFI_LIBDIR) {
        char path[4096];
        snprintf(path, sizeof path, "%s/libfabric.so.1", FABRIQ_OFI_LIBDIR);
        lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    }
    if (!lib) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "%s", why ? why : library_name);
        return;
    }
    FIND(lib, fi_version);
    FIND(lib, fi_strerror);
    FIND(lib, fi_getinfo);
    FIND(lib, fi_freeinfo);
    FIND(lib, fi_dupinfo);
    FIND(lib, fi_fabric);
    FIND(lib, fi_tostr);
    if (load_error[0]) {
        /* All or nothing: a partial table is never used. */
        p_fi_version = NULL;
    }
}

/* Opens libfabric once (later calls return the first outcome). Returns
 * NULL on success, or why it could not be opened. Thread-safe. */
const char *fabriq_ofi_load(void) {
    pthread_once(&load_once, load);
    return p_fi_version ? NULL : load_error;
}

/* ---- version and constants -------------------------------------------- */

uint32_t fabriq_ofi_version(uint32_t major, uint32_t minor) {
    return FI_VERSION(major, minor);
}

uint32_t fabriq_ofi_runtime_version(void) { return fi_version(); }

/* The Rust side hard-codes these flag values (they are ABI); a unit test
 * compares them with what the headers say through this table. */
const uint64_t fabriq_ofi_consts[] = {
    FI_MSG,          FI_RMA,         FI_TAGGED,      FI_SEND,
    FI_RECV,         FI_READ,        FI_WRITE,       FI_REMOTE_READ,
    FI_REMOTE_WRITE, FI_SOURCE,      FI_CONTEXT,     FI_CONTEXT2,
    FI_MR_LOCAL,     FI_MR_VIRT_ADDR, FI_MR_ALLOCATED, FI_MR_PROV_KEY,
    FI_MR_ENDPOINT,  FI_REMOTE_CQ_DATA, FI_ETRUNC,    FI_EAVAIL,
    FI_EAGAIN,       FI_ECANCELED,   FI_ENODATA,     FI_ADDR_UNSPEC,
    FI_EP_MSG,       FI_EP_RDM,      FI_PROGRESS_AUTO, FI_PROGRESS_MANUAL,
    FI_TRANSMIT,     FI_RECV,        FI_WAIT_NONE,   FI_WAIT_FD,
    FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED, FI_AV_TABLE, FI_MR_RAW,
    FI_MR_MMU_NOTIFY, FI_MR_RMA_EVENT, FI_MR_HMEM,  FI_MULTI_RECV,
    FI_THREAD_SAFE,
};
const size_t fabriq_ofi_consts_len =
    sizeof(fabriq_ofi_consts) / sizeof(fabriq_ofi_consts[0]);

const char *fabriq_ofi_strerror(int err) {
    return fabriq_ofi_load() ? NULL : fi_strerror(err);
}

/* ---- fi_info: hints, getinfo, accessors ------------------------------- */

/* Builds a hints struct from plain arguments. `prov_name` may be NULL.
 * Returns NULL when allocation fails. Free with fabriq_ofi_freeinfo. */
struct fi_info *fabriq_ofi_hints_new(const char *prov_name, int ep_type,
                                     uint64_t caps, uint64_t mode,
                                     int mr_mode, int threading) {
    struct fi_info *hints = fi_dupinfo(NULL); /* fi_allocinfo */
    if (!hints)
        return NULL;
    hints->caps = caps;
    hints->mode = mode;
    hints->ep_attr->type = (enum fi_ep_type)ep_type;
    hints->domain_attr->mr_mode = mr_mode;
    hints->domain_attr->threading = (enum fi_threading)threading;
    if (prov_name) {
        hints->fabric_attr->prov_name = strdup(prov_name);
        if (!hints->fabric_attr->prov_name) {
            fi_freeinfo(hints);
            return NULL;
        }
    }
    return hints;
}

int fabriq_ofi_getinfo(uint32_t version, const char *node,
                       const char *service, uint64_t flags,
                       const struct fi_info *hints, struct fi_info **info) {
    return fi_getinfo(version, node, service, flags, hints, info);
}

void fabriq_ofi_freeinfo(struct fi_info *info) { fi_freeinfo(info); }

/* Duplicates one entry only (the copy's `next` is NULL). */
struct fi_info *fabriq_ofi_dupinfo_one(const struct fi_info *info) {
    struct fi_info *copy = fi_dupinfo(info);
    if (copy)
        copy->next = NULL;
    return copy;
}

struct fi_info *fabriq_ofi_info_next(const struct fi_info *i) { return i->next; }
const char *fabriq_ofi_info_prov_name(const struct fi_info *i) {
    return i->fabric_attr ? i->fabric_attr->prov_name : NULL;
}
uint32_t fabriq_ofi_info_prov_version(const struct fi_info *i) {
    return i->fabric_attr ? i->fabric_attr->prov_version : 0;
}
const char *fabriq_ofi_info_fabric_name(const struct fi_info *i) {
    return i->fabric_attr ? i->fabric_attr->name : NULL;
}
const char *fabriq_ofi_info_domain_name(const struct fi_info *i) {
    return i->domain_attr ? i->domain_attr->name : NULL;
}
int fabriq_ofi_info_ep_type(const struct fi_info *i) {
    return i->ep_attr ? (int)i->ep_attr->type : 0;
}
uint32_t fabriq_ofi_info_protocol(const struct fi_info *i) {
    return i->ep_attr ? i->ep_attr->protocol : 0;
}
uint64_t fabriq_ofi_info_caps(const struct fi_info *i) { return i->caps; }
uint64_t fabriq_ofi_info_mode(const struct fi_info *i) { return i->mode; }
uint32_t fabriq_ofi_info_addr_format(const struct fi_info *i) { return i->addr_format; }
int fabriq_ofi_info_mr_mode(const struct fi_info *i) {
    return i->domain_attr ? i->domain_attr->mr_mode : 0;
}
size_t fabriq_ofi_info_mr_key_size(const struct fi_info *i) {
    return i->domain_attr ? i->domain_attr->mr_key_size : 0;
}
size_t fabriq_ofi_info_cq_data_size(const struct fi_info *i) {
    return i->domain_attr ? i->domain_attr->cq_data_size : 0;
}
int fabriq_ofi_info_data_progress(const struct fi_info *i) {
    return i->domain_attr ? (int)i->domain_attr->data_progress : 0;
}
int fabriq_ofi_info_control_progress(const struct fi_info *i) {
    return i->domain_attr ? (int)i->domain_attr->control_progress : 0;
}
int fabriq_ofi_info_threading(const struct fi_info *i) {
    return i->domain_attr ? (int)i->domain_attr->threading : 0;
}
size_t fabriq_ofi_info_max_msg_size(const struct fi_info *i) {
    return i->ep_attr ? i->ep_attr->max_msg_size : 0;
}
size_t fabriq_ofi_info_inject_size(const struct fi_info *i) {
    return i->tx_attr ? i->tx_attr->inject_size : 0;
}
size_t fabriq_ofi_info_tx_iov_limit(const struct fi_info *i) {
    return i->tx_attr ? i->tx_attr->iov_limit : 0;
}
size_t fabriq_ofi_info_tx_size(const struct fi_info *i) {
    return i->tx_attr ? i->tx_attr->size : 0;
}
size_t fabriq_ofi_info_rx_size(const struct fi_info *i) {
    return i->rx_attr ? i->rx_attr->size : 0;
}
const void *fabriq_ofi_info_src_addr(const struct fi_info *i, size_t *len) {
    *len = i->src_addrlen;
    return i->src_addr;
}
const void *fabriq_ofi_info_dest_addr(const struct fi_info *i, size_t *len) {
    *len = i->dest_addrlen;
    return i->dest_addr;
}
/* fi_tostr output lives in a thread-local buffer inside libfabric: the
 * caller copies it out before the next call on this thread. */
const char *fabriq_ofi_info_tostr(const struct fi_info *i) {
    return fi_tostr(i, FI_TYPE_INFO);
}
const char *fabriq_ofi_addr_format_tostr(uint32_t fmt) {
    return fi_tostr(&fmt, FI_TYPE_ADDR_FORMAT);
}

/* ---- fabric / domain / close ------------------------------------------ */

int fabriq_ofi_fabric(const struct fi_info *info, struct fid_fabric **fabric) {
    return fi_fabric(info->fabric_attr, fabric, NULL);
}

int fabriq_ofi_domain(struct fid_fabric *fabric, struct fi_info *info,
                      struct fid_domain **domain) {
    return fi_domain(fabric, info, domain, NULL);
}

int fabriq_ofi_close_fabric(struct fid_fabric *f) { return fi_close(&f->fid); }
int fabriq_ofi_close_domain(struct fid_domain *d) { return fi_close(&d->fid); }
int fabriq_ofi_close_ep(struct fid_ep *e) { return fi_close(&e->fid); }
int fabriq_ofi_close_cq(struct fid_cq *c) { return fi_close(&c->fid); }
int fabriq_ofi_close_av(struct fid_av *a) { return fi_close(&a->fid); }
int fabriq_ofi_close_mr(struct fid_mr *m) { return fi_close(&m->fid); }

/* ---- completion queues ------------------------------------------------- */

int fabriq_ofi_cq_open(struct fid_domain *domain, size_t size, int format,
                       int wait_obj, struct fid_cq **cq) {
    struct fi_cq_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = size;
    attr.format = (enum fi_cq_format)format;
    attr.wait_obj = (enum fi_wait_obj)wait_obj;
    attr.wait_cond = FI_CQ_COND_NONE;
    return fi_cq_open(domain, &attr, cq, NULL);
}

/* One completion in the shape the Rust side reads, whatever the CQ format. */
struct fabriq_ofi_completion {
    void *op_context;
    uint64_t flags;
    size_t len;
    void *buf;
    uint64_t data;
    uint64_t tag;
};

#define FABRIQ_OFI_CQ_BATCH 64

/* Reads up to `count` entries (at most 64 per call). Returns the count read
 * or a negative fi_errno (-FI_EAGAIN when empty, -FI_EAVAIL when an error
 * entry is at the head). With `src` non-NULL (an endpoint with FI_SOURCE)
 * the entries are read with fi_cq_readfrom and src[k] receives the source
 * of entry k (FI_ADDR_NOTAVAIL when the provider cannot tell). */
ssize_t fabriq_ofi_cq_read(struct fid_cq *cq, int format,
                           struct fabriq_ofi_completion *out, size_t count,
                           fi_addr_t *src) {
    ssize_t n, k;
    if (count > FABRIQ_OFI_CQ_BATCH)
        count = FABRIQ_OFI_CQ_BATCH;
    if (format == FI_CQ_FORMAT_TAGGED) {
        struct fi_cq_tagged_entry e[FABRIQ_OFI_CQ_BATCH];
        n = src ? fi_cq_readfrom(cq, e, count, src) : fi_cq_read(cq, e, count);
        for (k = 0; k < n; k++) {
            out[k].op_context = e[k].op_context;
            out[k].flags = e[k].flags;
            out[k].len = e[k].len;
            out[k].buf = e[k].buf;
            out[k].data = e[k].data;
            out[k].tag = e[k].tag;
        }
    } else {
        struct fi_cq_data_entry e[FABRIQ_OFI_CQ_BATCH];
        n = src ? fi_cq_readfrom(cq, e, count, src) : fi_cq_read(cq, e, count);
        for (k = 0; k < n; k++) {
            out[k].op_context = e[k].op_context;
            out[k].flags = e[k].flags;
            out[k].len = e[k].len;
            out[k].buf = e[k].buf;
            out[k].data = e[k].data;
            out[k].tag = 0;
        }
    }
    return n;
}

/* Reads one error entry. The provider's error text (fi_cq_strerror) is
 * copied into `msg` (NUL-terminated, truncated to msg_len). Returns 1 when
 * an entry was read, or a negative fi_errno (-FI_EAGAIN: none). */
ssize_t fabriq_ofi_cq_readerr(struct fid_cq *cq, void **op_context,
                              uint64_t *flags, size_t *len, size_t *olen,
                              uint64_t *data, uint64_t *tag, int *err,
                              int *prov_errno, char *msg, size_t msg_len) {
    struct fi_cq_err_entry e;
    ssize_t ret;
    memset(&e, 0, sizeof e);
    ret = fi_cq_readerr(cq, &e, 0);
    if (ret < 0)
        return ret;
    *op_context = e.op_context;
    *flags = e.flags;
    *len = e.len;
    *olen = e.olen;
    *data = e.data;
    *tag = e.tag;
    *err = e.err;
    *prov_errno = e.prov_errno;
    if (msg && msg_len) {
        const char *s = fi_cq_strerror(cq, e.prov_errno, e.err_data, NULL, 0);
        if (!s)
            s = fi_strerror(e.err);
        strncpy(msg, s, msg_len - 1);
        msg[msg_len - 1] = '\0';
    }
    return 1;
}

/* FI_GETWAIT for an FI_WAIT_FD CQ: stores the fd. */
int fabriq_ofi_cq_wait_fd(struct fid_cq *cq, int *fd) {
    return fi_control(&cq->fid, FI_GETWAIT, fd);
}

/* fi_trywait on one CQ: 0 means it is safe to block on the wait fd,
 * -FI_EAGAIN means completions may be pending: read the CQ first. */
int fabriq_ofi_cq_trywait(struct fid_fabric *fabric, struct fid_cq *cq) {
    struct fid *fids[1];
    fids[0] = &cq->fid;
    return fi_trywait(fabric, fids, 1);
}

/* fi_cq_sread with a timeout in ms (provider must support a wait object). */
ssize_t fabriq_ofi_cq_sread(struct fid_cq *cq, int format,
                            struct fabriq_ofi_completion *out, int timeout_ms) {
    struct fi_cq_tagged_entry e;
    ssize_t n;
    (void)format;
    memset(&e, 0, sizeof e);
    if (format == FI_CQ_FORMAT_TAGGED) {
        n = fi_cq_sread(cq, &e, 1, NULL, timeout_ms);
    } else {
        struct fi_cq_data_entry d;
        n = fi_cq_sread(cq, &d, 1, NULL, timeout_ms);
        if (n == 1) {
            e.op_context = d.op_context;
            e.flags = d.flags;
            e.len = d.len;
            e.buf = d.buf;
            e.data = d.data;
        }
    }
    if (n == 1) {
        out->op_context = e.op_context;
        out->flags = e.flags;
        out->len = e.len;
        out->buf = e.buf;
        out->data = e.data;
        out->tag = e.tag;
    }
    return n;
}

/* ---- address vectors --------------------------------------------------- */

int fabriq_ofi_av_open(struct fid_domain *domain, size_t count,
                       struct fid_av **av) {
    struct fi_av_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.type = FI_AV_TABLE;
    attr.count = count;
    return fi_av_open(domain, &attr, av, NULL);
}

/* Inserts one raw address. Returns the number inserted (1) or a negative
 * fi_errno. */
int fabriq_ofi_av_insert(struct fid_av *av, const void *addr,
                         fi_addr_t *fi_addr) {
    return fi_av_insert(av, addr, 1, fi_addr, 0, NULL);
}

int fabriq_ofi_av_remove(struct fid_av *av, fi_addr_t fi_addr) {
    return fi_av_remove(av, &fi_addr, 1, 0);
}

/* ---- memory registration ---------------------------------------------- */

int fabriq_ofi_mr_reg(struct fid_domain *domain, const void *buf, size_t len,
                      uint64_t access, uint64_t requested_key,
                      struct fid_mr **mr) {
    return fi_mr_reg(domain, buf, len, access, 0, requested_key, 0, mr, NULL);
}
void *fabriq_ofi_mr_desc(struct fid_mr *mr) { return fi_mr_desc(mr); }
uint64_t fabriq_ofi_mr_key(struct fid_mr *mr) { return fi_mr_key(mr); }
int fabriq_ofi_mr_bind_ep(struct fid_mr *mr, struct fid_ep *ep) {
    return fi_mr_bind(mr, &ep->fid, 0);
}
int fabriq_ofi_mr_enable(struct fid_mr *mr) { return fi_mr_enable(mr); }

/* ---- endpoints --------------------------------------------------------- */

int fabriq_ofi_endpoint(struct fid_domain *domain, struct fi_info *info,
                        struct fid_ep **ep) {
    return fi_endpoint(domain, info, ep, NULL);
}
int fabriq_ofi_ep_bind_cq(struct fid_ep *ep, struct fid_cq *cq,
                          uint64_t flags) {
    return fi_ep_bind(ep, &cq->fid, flags);
}
int fabriq_ofi_ep_bind_av(struct fid_ep *ep, struct fid_av *av) {
    return fi_ep_bind(ep, &av->fid, 0);
}
int fabriq_ofi_enable(struct fid_ep *ep) { return fi_enable(ep); }
int fabriq_ofi_setname(struct fid_ep *ep, void *addr, size_t len) {
    return fi_setname(&ep->fid, addr, len);
}
int fabriq_ofi_getname(struct fid_ep *ep, void *addr, size_t *len) {
    return fi_getname(&ep->fid, addr, len);
}
ssize_t fabriq_ofi_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
                        fi_addr_t src, void *context) {
    return fi_recv(ep, buf, len, desc, src, context);
}
ssize_t fabriq_ofi_send(struct fid_ep *ep, const void *buf, size_t len,
                        void *desc, fi_addr_t dest, void *context) {
    return fi_send(ep, buf, len, desc, dest, context);
}
ssize_t fabriq_ofi_senddata(struct fid_ep *ep, const void *buf, size_t len,
                            void *desc, uint64_t data, fi_addr_t dest,
                            void *context) {
    return fi_senddata(ep, buf, len, desc, data, dest, context);
}
/* A send of two pieces, received as one message: a page (registered,
 * `desc0`) and then `buf1`, which the provider reads in place (no
 * descriptor: only for domains without FI_MR_LOCAL). */
ssize_t fabriq_ofi_send2data(struct fid_ep *ep, const void *buf0, size_t len0,
                             void *desc0, const void *buf1, size_t len1,
                             int has_data, uint64_t data, fi_addr_t dest,
                             void *context) {
    struct iovec iov[2] = {{(void *)buf0, len0}, {(void *)buf1, len1}};
    void *desc[2] = {desc0, NULL};
    struct fi_msg msg = {
        .msg_iov = iov,
        .desc = desc,
        .iov_count = 2,
        .addr = dest,
        .context = context,
        .data = data,
    };
    return fi_sendmsg(ep, &msg, FI_COMPLETION | (has_data ? FI_REMOTE_CQ_DATA : 0));
}
ssize_t fabriq_ofi_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
                        fi_addr_t src, uint64_t addr, uint64_t key,
                        void *context) {
    return fi_read(ep, buf, len, desc, src, addr, key, context);
}
ssize_t fabriq_ofi_tsend(struct fid_ep *ep, const void *buf, size_t len,
                         void *desc, fi_addr_t dest, uint64_t tag,
                         void *context) {
    return fi_tsend(ep, buf, len, desc, dest, tag, context);
}
ssize_t fabriq_ofi_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
                         fi_addr_t src, uint64_t tag, uint64_t ignore,
                         void *context) {
    return fi_trecv(ep, buf, len, desc, src, tag, ignore, context);
}
ssize_t fabriq_ofi_cancel(struct fid_ep *ep, void *context) {
    return fi_cancel(&ep->fid, context);
}
