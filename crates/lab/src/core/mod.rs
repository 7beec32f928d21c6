//! The core: what every study and the front share, naming no study and
//! importing nothing above it: the measurement core ([`measure`],
//! [`clock`], [`sweep`]), statistics ([`stats`]), the store ([`store`]) and
//! its records ([`results`]), machine facts ([`machine`]), the lock
//! registry ([`registry`], [`locks`], [`peers`], [`lablock`]), programs run
//! under the interposer ([`program`]), text tables ([`report`], [`table`]), charts
//! ([`plot`]), the verdict's primitives ([`verdict`]), output and progress
//! ([`out`], [`progress`], [`interrupt`]), files ([`files`]), errors
//! ([`error`]), argument parsers ([`args`]), a run's way into the store
//! ([`run`]), and the [`study::Study`] trait.

pub mod args;
pub mod clock;
pub mod error;
pub mod files;
pub mod heap;
pub mod interrupt;
pub mod lablock;
pub mod locks;
pub mod machine;
pub mod measure;
pub mod out;
pub mod peers;
pub mod plot;
pub mod program;
pub mod progress;
pub mod registry;
pub mod report;
pub mod results;
pub mod run;
pub mod stats;
pub mod store;
pub mod study;
pub mod sweep;
pub mod table;
pub mod verdict;
