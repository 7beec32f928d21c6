//! The front: the command line ([`cli`]), the one catalog of studies
//! ([`catalog`]: the only place a study is named, with the standard suite
//! that runs several), and the commands over stored runs ([`commands`]: show,
//! runs, compare and baselines ([`compare`]), the HTML report ([`html`]),
//! plot, export ([`export`]); push, pull and machines ([`share`]); history ([`history`])).

pub mod catalog;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod export;
pub mod history;
pub mod html;
pub mod plot;
pub mod share;
pub mod show;
