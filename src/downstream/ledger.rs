//! The memory budget, shared between downstreams by what each holds.
//!
//! Equal fixed shares refuse one honest big downstream (5,000 CRDs) while
//! the budget as a whole has room, and shares sized for it let a hostile
//! neighbour take as much. So a downstream with `memoryShareBytes` keeps
//! exactly that, and the others draw from one pool: each is guaranteed half
//! of an equal part of it, and may hold more while the others leave it
//! free. What one may hold is the budget less, for every other downstream,
//! the larger of what it holds and its guarantee — so whatever the order of
//! their rounds, every downstream can always reach its guarantee, and
//! together they never pass the budget.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use crate::config::memory::pooled_guarantee;

/// One downstream's standing in the budget.
#[derive(Debug, Clone, Copy)]
struct Account {
    /// What it can always hold.
    guaranteed: usize,
    /// `memoryShareBytes` was set: the guarantee is also the most it holds.
    fixed: bool,
    /// What its last accepted round holds.
    held: usize,
}

/// What every downstream holds, against the budget.
#[derive(Debug)]
pub struct Ledger {
    budget: usize,
    accounts: Mutex<BTreeMap<String, Account>>,
}

/// A round that does not fit what its downstream may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// What the round would hold.
    pub needed: usize,
    /// What the downstream may hold now.
    pub allowed: usize,
}

impl Ledger {
    /// A ledger for `downstreams`: each name with its `memoryShareBytes`,
    /// if set. The configuration has checked that the fixed shares fit
    /// the budget.
    #[must_use]
    pub fn new(budget: usize, downstreams: &[(String, Option<usize>)]) -> Self {
        let fixed: usize = downstreams.iter().filter_map(|(_, s)| *s).sum();
        let pooled = downstreams.iter().filter(|(_, s)| s.is_none()).count();
        let guarantee = pooled_guarantee(budget.saturating_sub(fixed), pooled);
        let accounts = downstreams
            .iter()
            .map(|(name, share)| {
                let account = Account {
                    guaranteed: share.unwrap_or(guarantee),
                    fixed: share.is_some(),
                    held: 0,
                };
                (name.clone(), account)
            })
            .collect();
        Self { budget, accounts: Mutex::new(accounts) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Account>> {
        self.accounts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// What `name` may hold now, all its documents and discovery together.
    #[must_use]
    pub fn allowance(&self, name: &str) -> usize {
        allowance(self.budget, &self.lock(), name)
    }

    /// Records that `name` now holds `held` bytes, if that fits what it
    /// may hold; otherwise it keeps what it held.
    ///
    /// # Errors
    /// [`Refused`] when `held` is more than [`Ledger::allowance`].
    pub fn settle(&self, name: &str, held: usize) -> Result<(), Refused> {
        let mut accounts = self.lock();
        let allowed = allowance(self.budget, &accounts, name);
        if held > allowed {
            return Err(Refused { needed: held, allowed });
        }
        if let Some(account) = accounts.get_mut(name) {
            account.held = held;
        }
        Ok(())
    }

    /// What `name`'s last accepted round holds.
    #[must_use]
    pub fn held(&self, name: &str) -> usize {
        self.lock().get(name).map_or(0, |a| a.held)
    }
}

fn allowance(budget: usize, accounts: &BTreeMap<String, Account>, name: &str) -> usize {
    let Some(own) = accounts.get(name) else { return 0 };
    if own.fixed {
        return own.guaranteed;
    }
    let others: usize = accounts
        .iter()
        .filter(|(other, _)| other.as_str() != name)
        .map(|(_, a)| a.held.max(a.guaranteed))
        .sum();
    budget.saturating_sub(others).max(own.guaranteed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn ledger(budget: usize, shares: &[(&str, Option<usize>)]) -> Ledger {
        let list: Vec<_> = shares.iter().map(|(n, s)| ((*n).to_owned(), *s)).collect();
        Ledger::new(budget, &list)
    }

    #[test]
    fn one_downstream_may_hold_the_whole_budget() {
        let l = ledger(200 * MIB, &[("fleet", None)]);
        assert_eq!(l.allowance("fleet"), 200 * MIB);
        assert_eq!(l.settle("fleet", 150 * MIB), Ok(()));
        assert_eq!(l.held("fleet"), 150 * MIB);
        assert_eq!(
            l.settle("fleet", 201 * MIB),
            Err(Refused { needed: 201 * MIB, allowed: 200 * MIB })
        );
        assert_eq!(l.held("fleet"), 150 * MIB, "a refused round keeps what was held");
    }

    #[test]
    fn a_big_downstream_takes_what_a_small_one_leaves() {
        // Equal fixed shares would give each 100 MiB and refuse the fleet.
        let l = ledger(200 * MIB, &[("fleet", None), ("kube", None)]);
        assert_eq!(l.settle("kube", 25 * MIB), Ok(()));
        // The small one's guarantee (a quarter) stays reserved for it.
        assert_eq!(l.allowance("fleet"), 150 * MIB);
        assert_eq!(l.settle("fleet", 140 * MIB), Ok(()));
        // And the small one can still grow to its guarantee and past it
        // into what is free.
        assert_eq!(l.allowance("kube"), 60 * MIB);
        assert_eq!(l.settle("kube", 50 * MIB), Ok(()));
    }

    #[test]
    fn a_hostile_downstream_cannot_crowd_out_a_neighbours_guarantee() {
        let l = ledger(200 * MIB, &[("hostile", None), ("kube", None)]);
        // First come: the hostile one takes all it may.
        let most = l.allowance("hostile");
        assert_eq!(most, 150 * MIB);
        assert!(l.settle("hostile", most + 1).is_err());
        assert_eq!(l.settle("hostile", most), Ok(()));
        // The neighbour still reaches its guarantee.
        assert_eq!(l.allowance("kube"), 50 * MIB);
        assert_eq!(l.settle("kube", 50 * MIB), Ok(()));
        assert!(l.settle("kube", 50 * MIB + 1).is_err());
    }

    #[test]
    fn a_fixed_share_is_both_guarantee_and_bound() {
        let l = ledger(200 * MIB, &[("a", Some(120 * MIB)), ("b", None), ("c", None)]);
        assert_eq!(l.allowance("a"), 120 * MIB);
        assert!(l.settle("a", 120 * MIB + 1).is_err());
        // The pool is 80 MiB; b and c are guaranteed 20 MiB each.
        assert_eq!(l.allowance("b"), 60 * MIB);
        assert_eq!(l.settle("b", 60 * MIB), Ok(()));
        assert_eq!(l.allowance("c"), 20 * MIB);
    }

    #[test]
    fn whatever_the_order_the_sum_never_passes_the_budget() {
        let names = ["a", "b", "c", "d"];
        let l = ledger(100 * MIB, &names.map(|n| (n, None)));
        // Rounds in turn, each asking for more than it may.
        for round in 0..20 {
            for (i, name) in names.iter().enumerate() {
                let want = (round * 7 + i * 13) % 60 * MIB;
                let _ = l.settle(name, want);
                let total: usize = names.iter().map(|n| l.held(n)).sum();
                assert!(total <= 100 * MIB, "{total}");
            }
        }
        for name in names {
            assert_eq!(l.settle(name, 0), Ok(()));
        }
        for name in names {
            assert!(l.allowance(name) >= 100 * MIB / 8, "{name}");
        }
    }

    #[test]
    fn an_unknown_downstream_may_hold_nothing() {
        let l = ledger(100 * MIB, &[("a", None)]);
        assert_eq!(l.allowance("nobody"), 0);
    }
}
