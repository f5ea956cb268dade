//! Every interleaving of two threads' steps, for the hand-off protocols
//! whose memory ordering loom cannot check (the store-buffering pattern
//! of `fabriq_ofi::shared`: loom models SeqCst as AcqRel). Each thread's
//! protocol is written as named steps on a shared `World`, assumed
//! sequentially consistent (which the fences on both sides provide), and
//! every merge of the two sequences is run to its end, where `lost`
//! judges the world.

/// One step: its name (for the trace) and what it does.
pub(crate) type Step<W> = (&'static str, fn(&mut W));

/// The first merge of `a` and `b` (each kept in its own order) whose end
/// `lost` condemns, as the names of its steps; None when there is none.
pub(crate) fn first_losing<W: Copy>(
    a: &[Step<W>],
    b: &[Step<W>],
    start: W,
    lost: fn(&W) -> bool,
) -> Option<Vec<&'static str>> {
    fn merges<W: Copy>(
        (a, b): (&[Step<W>], &[Step<W>]),
        (i, j): (usize, usize),
        world: W,
        lost: fn(&W) -> bool,
        trace: &mut Vec<&'static str>,
    ) -> Option<Vec<&'static str>> {
        if i == a.len() && j == b.len() {
            return lost(&world).then(|| trace.clone());
        }
        let next = [(a.get(i), (i + 1, j)), (b.get(j), (i, j + 1))];
        for (step, taken) in next {
            let Some(&(name, apply)) = step else { continue };
            let mut w = world;
            apply(&mut w);
            trace.push(name);
            let found = merges((a, b), taken, w, lost, trace);
            trace.pop();
            if found.is_some() {
                return found;
            }
        }
        None
    }
    merges((a, b), (0, 0), start, lost, &mut Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_merge_is_tried_and_the_first_loss_is_named() {
        #[derive(Clone, Copy, Default)]
        struct W {
            x: u32,
        }
        let a: [Step<W>; 2] = [
            ("a1", |w| w.x = w.x * 10 + 1),
            ("a2", |w| w.x = w.x * 10 + 2),
        ];
        let b: [Step<W>; 1] = [("b1", |w| w.x = w.x * 10 + 3)];
        // Three merges: 123, 132, 312; only the last ends at 312.
        assert_eq!(
            first_losing(&a, &b, W::default(), |w| w.x == 312),
            Some(vec!["b1", "a1", "a2"])
        );
        assert_eq!(first_losing(&a, &b, W::default(), |w| w.x == 321), None);
    }
}
