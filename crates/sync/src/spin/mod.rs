//! Busy-waiting mutual exclusion, one algorithm per file.
//!
//! Each raw lock has inherent `acquire`/`try_acquire`/`release` methods (the
//! algorithm, model-checked under loom) and, outside loom, a thin
//! `lock_api::RawMutex` layer with a ready `…Mutex<T>` alias.

pub mod anderson;
pub mod backoff;
pub mod clh;
pub mod hemlock;
pub mod k42;
pub mod malthusian;
pub mod mcs;
pub mod mcs_tp;
pub mod qspin;
pub mod tas;
pub mod ticket;
pub mod ticket_backoff;
pub mod ttas;
pub mod twa;

pub use anderson::RawAnderson;
pub use backoff::RawBackoff;
pub use clh::{ClhToken, RawClh};
pub use hemlock::{HemlockToken, RawHemlock};
pub use k42::RawK42;
pub use malthusian::{MalthusianToken, RawMalthusian, Restriction};
pub use mcs::{McsToken, RawMcs};
pub use mcs_tp::{McsTpToken, RawMcsTp};
pub use qspin::RawQspin;
pub use tas::RawTas;
pub use ticket::{RawTicket, Ticket};
pub use ticket_backoff::RawTicketBackoff;
pub use ttas::RawTtas;
pub use twa::RawTwa;

#[cfg(not(loom))]
pub use anderson::AndersonMutex;
#[cfg(not(loom))]
pub use backoff::BackoffMutex;
#[cfg(not(loom))]
pub use clh::ClhMutex;
#[cfg(not(loom))]
pub use hemlock::HemlockMutex;
#[cfg(not(loom))]
pub use k42::K42Mutex;
#[cfg(not(loom))]
pub use malthusian::MalthusianMutex;
#[cfg(not(loom))]
pub use mcs::McsMutex;
#[cfg(not(loom))]
pub use mcs_tp::McsTpMutex;
#[cfg(not(loom))]
pub use qspin::QspinMutex;
#[cfg(not(loom))]
pub use tas::TasMutex;
#[cfg(not(loom))]
pub use ticket::TicketMutex;
#[cfg(not(loom))]
pub use ticket_backoff::TicketBackoffMutex;
#[cfg(not(loom))]
pub use ttas::TtasMutex;
#[cfg(not(loom))]
pub use twa::TwaMutex;
