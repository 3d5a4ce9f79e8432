//! The engine's bug toggles: each one a small enum ([`Toggle`], declared with [`toggle!`]) whose default is
//! RisingWave's fix, declared **beside its one read site**, in the crate where RisingWave had the bug (#22384's
//! `OnWorkerErr` in the barrier crate's `collect.rs`, #16815's `BackfillVnode` in the stream crate's arrangement
//! backfill, #19138's `RescheduleBackfilling` in meta's `scale.rs`, ...). Only #14910's [`DropMode`] lives here,
//! because meta, recovery and the simulation's checkers all read it.
//!
//! [`Toggles`] is the set of a run's toggles that differ from their default, keyed by the toggle's type. It is
//! carried whole into each engine crate's config (`MetaConfig::toggles`, which meta hands to the barrier manager,
//! and `StreamConfig::toggles` → `BuildEnv::toggles`), and a read site asks it for its own enum:
//! `config.toggles.get::<RescheduleBackfilling>()`. The catalogue (`epochlab-sim`'s `bugs` module) sets the
//! named bug's toggle by naming the same type, so a toggle that is set but not declared, or declared under
//! another name, is a compile error, and no config copies toggles field by field. Nothing in the engine knows
//! which bug a run is of.

mod drop_mode;

use std::any::TypeId;
use std::fmt;

pub use drop_mode::{DropMode, ParseDropModeError};

/// One bug's seam in the engine: a field-less enum, `Copy`, whose `Default` is the fixed behaviour. Declare one
/// with [`toggle!`](crate::toggle), beside the code that reads it.
pub trait Toggle: Copy + Default + Eq + fmt::Debug + Send + Sync + 'static {
    /// Its name in [`Toggles`]'s `Debug` (the type's name).
    const NAME: &'static str;
    /// Every value, in declaration order.
    const VALUES: &'static [Self];
}

/// Declares a toggle: the enum (with `Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash`) and
/// its [`Toggle`] impl. Mark the fixed variant `#[default]`.
///
/// ```
/// epochlab_common::toggle! {
///     /// RisingWave #NNNNN: when the thing is flushed.
///     pub enum FlushWait {
///         /// Before the fix.
///         Never,
///         /// The fix.
///         #[default]
///         UntilCommitted,
///     }
/// }
/// let toggles = epochlab_common::Toggles::default().with(FlushWait::Never);
/// assert_eq!(toggles.get::<FlushWait>(), FlushWait::Never);
/// ```
#[macro_export]
macro_rules! toggle {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        $vis enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $crate::toggles::Toggle for $name {
            const NAME: &'static str = stringify!($name);
            const VALUES: &'static [Self] = &[$($name::$variant),+];
        }
    };
}

/// How many toggles one run may set away from their defaults (a run sets its bug's; a test may set a few).
pub const TOGGLES_SET_MAX: usize = 8;

/// One toggle set away from its default.
#[derive(Clone, Copy)]
struct Entry {
    name: &'static str,
    type_id: TypeId,
    /// Its position in its [`Toggle::VALUES`].
    index: usize,
    value: &'static (dyn fmt::Debug + Sync),
}

/// The toggles of a run that differ from their defaults; every other toggle reads its default (its fix).
/// Bounded ([`TOGGLES_SET_MAX`]), `Copy`, ordered by name.
#[derive(Clone, Copy, Default)]
pub struct Toggles {
    set: [Option<Entry>; TOGGLES_SET_MAX],
}

impl Toggles {
    /// These toggles with `value` set (a default value unsets it).
    pub fn with<T: Toggle>(mut self, value: T) -> Toggles {
        let index = T::VALUES
            .iter()
            .position(|v| *v == value)
            .expect("a toggle's VALUES holds every value");
        let kept = self.set.into_iter().flatten().filter(|e| e.name != T::NAME);
        let added = (value != T::default()).then(|| Entry {
            name: T::NAME,
            type_id: TypeId::of::<T>(),
            index,
            value: &T::VALUES[index],
        });
        let mut entries: Vec<Entry> = kept.chain(added).collect();
        entries.sort_by_key(|e| e.name);
        assert!(
            entries.len() <= TOGGLES_SET_MAX,
            "more than {TOGGLES_SET_MAX} toggles set"
        );
        self.set = [None; TOGGLES_SET_MAX];
        for (slot, e) in self.set.iter_mut().zip(entries) {
            *slot = Some(e);
        }
        self
    }

    /// The value of toggle `T`: as set, or its default (the fix).
    pub fn get<T: Toggle>(&self) -> T {
        match self.entries().find(|e| e.name == T::NAME) {
            None => T::default(),
            Some(e) => {
                assert_eq!(
                    e.type_id,
                    TypeId::of::<T>(),
                    "two toggles named {}",
                    T::NAME
                );
                T::VALUES[e.index]
            }
        }
    }

    /// The names of the toggles set away from their defaults, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.entries().map(|e| e.name)
    }

    fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.set.iter().flatten()
    }
}

impl PartialEq for Toggles {
    fn eq(&self, other: &Toggles) -> bool {
        let key = |e: &Entry| (e.name, e.type_id, e.index);
        self.entries().map(key).eq(other.entries().map(key))
    }
}

impl Eq for Toggles {}

/// `Toggles { BackfillVnode: Pk }`: the toggles away from their fix; `Toggles { }` is every bug fixed.
impl fmt::Debug for Toggles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = f.debug_struct("Toggles");
        for e in self.entries() {
            s.field(e.name, e.value);
        }
        s.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    crate::toggle! {
        /// A test toggle.
        enum Colour {
            Red,
            #[default]
            Green,
            Blue,
        }
    }

    #[test]
    fn an_unset_toggle_reads_its_default_and_a_set_one_its_value() {
        let t = Toggles::default();
        assert_eq!(t.get::<Colour>(), Colour::Green);
        assert_eq!(t.get::<DropMode>(), DropMode::Fixed);
        let t = t.with(Colour::Blue).with(DropMode::Buggy);
        assert_eq!(
            (t.get::<Colour>(), t.get::<DropMode>()),
            (Colour::Blue, DropMode::Buggy)
        );
        assert_eq!(t.names().collect::<Vec<_>>(), ["Colour", "DropMode"]);
        assert_eq!(
            format!("{t:?}"),
            "Toggles { Colour: Blue, DropMode: Buggy }"
        );
    }

    #[test]
    fn setting_a_default_unsets_and_equality_ignores_the_order_of_setting() {
        let a = Toggles::default().with(Colour::Red).with(DropMode::Buggy);
        let b = Toggles::default()
            .with(DropMode::Buggy)
            .with(Colour::Blue)
            .with(Colour::Red);
        assert_eq!(a, b);
        assert_eq!(
            a.with(Colour::Green).with(DropMode::Fixed),
            Toggles::default()
        );
        assert_ne!(a, a.with(Colour::Blue));
    }
}
