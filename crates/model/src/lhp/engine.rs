//! (API branch placeholder: the engine lands on main.)
use super::config::Scenario;
use super::result::{SimResult, Trace};
pub(crate) struct Sim;
impl Sim {
    pub(crate) fn new(_s: &Scenario, _trace: bool) -> Sim { Sim }
    pub(crate) fn run(self) -> (SimResult, Option<Trace>) { todo!("engine lands on main") }
}
