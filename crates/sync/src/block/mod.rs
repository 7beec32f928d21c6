//! Sleeping locks: waiters that cannot get the lock soon give their CPU
//! away and sleep in the kernel, on a futex, until the holder wakes them.

pub mod condvar;
pub mod futex;
pub mod futex3;
pub mod mutex;
pub mod park;
pub mod rwsem;
