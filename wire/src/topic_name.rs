//! One shared name per topic ([`shared_topic`]): partition keys built on one thread from equal
//! names share one `Arc`, so comparing two of them (which ordered maps of partitions do at every
//! level, in members, brokers and the checker alike) is a pointer comparison, not a comparison
//! of text. A simulation runs on one thread, so its members, brokers, producer and checker all
//! name a topic alike, whichever of them read the name first.
//!
//! Sharing changes no value: keys compare, order and hash by their text exactly as before, and
//! the table only answers lookups (nothing reads its order). It is bounded (names past
//! [`MAX_NAMES`] or longer than [`MAX_NAME_LEN`] get a name of their own), so a server fed
//! arbitrary topic names keeps a bounded table per thread.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

use crate::fixed_hash::FixedState;

/// How many names one thread's table keeps.
pub const MAX_NAMES: usize = 4096;
/// The longest name kept (Kafka's topic names are at most 249 characters).
pub const MAX_NAME_LEN: usize = 255;
/// How many of a thread's first names are found by a walk rather than a hash: a run names a
/// few topics, and comparing lengths first rejects most of them at once.
const FIRST: usize = 8;

/// One thread's names: its first few in a list, the rest in a set.
struct Names {
    first: Vec<Arc<str>>,
    rest: HashSet<Arc<str>, FixedState>,
}

impl Names {
    fn get(&self, name: &str) -> Option<&Arc<str>> {
        match self.first.iter().find(|n| n.len() == name.len() && ***n == *name) {
            Some(shared) => Some(shared),
            None => self.rest.get(name),
        }
    }

    fn len(&self) -> usize {
        self.first.len() + self.rest.len()
    }

    fn keep(&mut self, shared: &Arc<str>) {
        if self.first.len() < FIRST {
            self.first.push(shared.clone());
        } else if self.len() < MAX_NAMES {
            self.rest.insert(shared.clone());
        }
    }
}

thread_local! {
    static NAMES: RefCell<Names> = const {
        RefCell::new(Names { first: Vec::new(), rest: HashSet::with_hasher(FixedState::new()) })
    };
}

/// Topic `name` as this thread's shared name for it (made and kept on first use, while the
/// table has room).
pub fn shared_topic(name: &str) -> Arc<str> {
    if name.len() > MAX_NAME_LEN {
        return Arc::from(name);
    }
    NAMES.with(|names| {
        if let Some(shared) = names.borrow().get(name) {
            return shared.clone();
        }
        let shared: Arc<str> = Arc::from(name);
        names.borrow_mut().keep(&shared);
        shared
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal names on one thread share one `Arc`; a name past the length bound does not.
    #[test]
    fn equal_names_share_one_name() {
        let (a, b) = (shared_topic("orders"), shared_topic(&String::from("orders")));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(&*a, "orders");
        assert!(!Arc::ptr_eq(&a, &shared_topic("payments")));
        let long = "x".repeat(MAX_NAME_LEN + 1);
        assert!(!Arc::ptr_eq(&shared_topic(&long), &shared_topic(&long)));
        assert_eq!(&*shared_topic(&long), long);
    }

    /// The table stops growing at its bound: later names still read right, unshared.
    #[test]
    fn the_table_is_bounded() {
        std::thread::spawn(|| {
            for i in 0..MAX_NAMES + 10 {
                assert_eq!(&*shared_topic(&format!("t{i}")), format!("t{i}"));
            }
            assert_eq!(NAMES.with(|n| n.borrow().len()), MAX_NAMES);
            let late = format!("t{}", MAX_NAMES + 5);
            assert!(!Arc::ptr_eq(&shared_topic(&late), &shared_topic(&late)));
            assert!(Arc::ptr_eq(&shared_topic("t0"), &shared_topic("t0")));
        })
        .join()
        .expect("the table's thread");
    }
}
