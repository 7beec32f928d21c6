//! The simulator against the real locks, under one fixed schedule: a
//! holder on socket (NUMA node) 0 holds the lock while four threads
//! arrive one after another on nodes 1, 0, 1, 0; each takes the lock
//! once. The order in which they get it is each algorithm's hand-over
//! policy, and the simulator (`locklab_model::locksim::replay`) must give
//! the order the lock of `crates/sync` gives: arrival order for the FIFO
//! locks; for the NUMA-aware ones, the holder's node first (0, 2, 4), then
//! the other node's waiters in their order (1, 3).
//!
//! The real locks run on a virtual topology of two nodes
//! (`topology::set_thread_node`), so the test needs no NUMA machine; the
//! arrivals are 40 ms apart, which orders them on any machine that is not
//! stalled for that long.

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use lock_api::RawMutex;
use locklab_model::locksim::{replay, Algorithm, Costs, Placement, Topology};

/// Nodes of the holder (thread 0) and of the four that arrive after it.
const NODES: [usize; 5] = [0, 1, 0, 1, 0];

/// The order in which the five threads take `L` under the schedule.
fn real_order<L: RawMutex + Send + Sync + 'static>() -> Vec<u32> {
    let lock = Arc::new(lock_api::Mutex::<L, ()>::new(()));
    let order = Arc::new(Mutex::new(Vec::new()));
    let gap = Duration::from_millis(40);
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let holder = {
        let (lock, order) = (Arc::clone(&lock), Arc::clone(&order));
        thread::spawn(move || {
            locklab::topology::set_thread_node(Some(NODES[0]));
            let held = lock.lock();
            order.lock().unwrap().push(0);
            held_tx.send(()).unwrap();
            go_rx.recv().unwrap();
            drop(held);
        })
    };
    held_rx.recv().unwrap();
    let mut waiters = Vec::new();
    for (t, &node) in NODES.iter().enumerate().skip(1) {
        let (lock, order) = (Arc::clone(&lock), Arc::clone(&order));
        waiters.push(thread::spawn(move || {
            locklab::topology::set_thread_node(Some(node));
            let _held = lock.lock();
            order.lock().unwrap().push(t as u32);
        }));
        thread::sleep(gap);
    }
    go_tx.send(()).unwrap();
    holder.join().unwrap();
    for w in waiters {
        w.join().unwrap();
    }
    let v = order.lock().unwrap().clone();
    v
}

/// The order the simulator gives for the same schedule: the threads on
/// sockets 0, 1, 0, 1, 0 (round robin on two sockets), arriving 2 µs
/// apart (each has queued before the next arrives; the costs are
/// hundreds of ns) while the first holds the lock for 100 µs.
fn simulated_order(alg: Algorithm) -> Vec<u32> {
    let arrivals: Vec<f64> = (0..NODES.len()).map(|t| 2000.0 * t as f64).collect();
    replay(
        alg,
        Topology {
            sockets: 2,
            cores_per_socket: 4,
        },
        Placement::RoundRobin,
        Costs::seed002(),
        &arrivals,
        100_000.0,
    )
    .unwrap()
}

/// An algorithm, the run of its real lock, and the order both must give.
type Case = (Algorithm, fn() -> Vec<u32>, [u32; 5]);

#[test]
fn the_simulator_hands_over_in_the_order_the_real_locks_do() {
    let cases: [Case; 8] = [
        (
            Algorithm::Ticket,
            real_order::<locklab::RawTicket>,
            [0, 1, 2, 3, 4],
        ),
        (
            Algorithm::Mcs,
            real_order::<locklab::RawMcs>,
            [0, 1, 2, 3, 4],
        ),
        (
            Algorithm::Clh,
            real_order::<locklab::RawClh>,
            [0, 1, 2, 3, 4],
        ),
        (
            Algorithm::Hemlock,
            real_order::<locklab::RawHemlock>,
            [0, 1, 2, 3, 4],
        ),
        (
            Algorithm::Qspin,
            real_order::<locklab::RawQspin>,
            [0, 1, 2, 3, 4],
        ),
        (
            Algorithm::CboMcs,
            real_order::<locklab::RawCboMcs>,
            [0, 2, 4, 1, 3],
        ),
        (
            Algorithm::Hmcs,
            real_order::<locklab::RawHmcs>,
            [0, 2, 4, 1, 3],
        ),
        (
            Algorithm::Cna,
            real_order::<locklab::RawCna>,
            [0, 2, 4, 1, 3],
        ),
    ];
    for (alg, real, want) in cases {
        let real = real();
        let sim = simulated_order(alg);
        assert_eq!(real, want, "{}: the real lock's order", alg.name());
        assert_eq!(
            sim,
            real,
            "{}: the simulator against the real lock",
            alg.name()
        );
    }
}
