//! The front: the command line ([`cli`]), the one catalog of studies
//! ([`catalog`]: the only place a study is named), the standard suite
//! ([`suite`]), and the commands over stored runs ([`commands`]: show,
//! runs, compare and baselines ([`compare`]), the HTML report ([`html`]),
//! plot, export ([`export`])).

pub mod catalog;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod export;
pub mod html;
pub mod plot;
pub mod show;
pub mod suite;

#[cfg(test)]
mod plot_tests;
#[cfg(test)]
mod tests;
