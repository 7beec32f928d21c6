//! A key-value server's store: YCSB records (ten fields of 100 bytes, its
//! defaults) in an open-addressing hash table with linear probing, growing
//! by doubling at half load — the user-mode work of the server between its
//! kernel entries, standing for Redis's dictionary.
//!
//! Each record keeps a checksum of its fields, recomputed on every write
//! and verified on every read, so a record damaged by anyone (a kernel that
//! delivered a request twice to racing servers, or a test that corrupts a
//! byte on purpose) is found, and the checker walks the whole table after
//! each run ([`Table::check`]).
//!
//! Keys are record numbers mixed by a bijection of u64 (the splitmix64
//! finaliser), so distinct records have distinct nonzero keys spread over
//! the table (YCSB likewise hashes its record numbers into keys).

/// Fields per record (YCSB `fieldcount`).
pub const FIELDS: usize = 10;
/// Bytes per field (YCSB `fieldlength`).
pub const FIELD_LEN: usize = 100;
const BYTES: usize = FIELDS * FIELD_LEN;

/// The key of record number `i` (never 0).
pub fn key_of(i: u64) -> u64 {
    // splitmix64's finaliser is a bijection with 0 ↦ 0; i + 1 ≠ 0 for
    // every record number in range.
    let mut z = i.wrapping_add(1);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn fill(data: &mut [u8; BYTES], field: Option<usize>, seed: u64) {
    let range = match field {
        Some(f) => f * FIELD_LEN..(f + 1) * FIELD_LEN,
        None => 0..BYTES,
    };
    let mut x = seed | 1;
    for b in &mut data[range] {
        // xorshift: cheap bytes that depend on the seed.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

fn checksum(key: u64, version: u64, data: &[u8; BYTES]) -> u64 {
    let mut h = key ^ version.rotate_left(32);
    for c in data.chunks_exact(8) {
        h = (h ^ u64::from_le_bytes(c.try_into().expect("8 bytes"))).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// One record.
#[derive(Debug, Clone)]
struct Record {
    key: u64,
    version: u64,
    sum: u64,
    data: Box<[u8; BYTES]>,
}

impl Record {
    fn new(key: u64, seed: u64) -> Self {
        let mut data = Box::new([0u8; BYTES]);
        fill(&mut data, None, seed);
        let sum = checksum(key, 0, &data);
        Record {
            key,
            version: 0,
            sum,
            data,
        }
    }

    fn intact(&self) -> bool {
        checksum(self.key, self.version, &self.data) == self.sum
    }
}

/// See the module documentation.
#[derive(Debug, Clone)]
pub struct Table {
    /// Record index + 1 per slot, 0 = empty.
    slots: Vec<u32>,
    records: Vec<Record>,
    /// Reads that found a damaged record.
    pub damaged: u64,
}

impl Table {
    /// A table holding records `0..n`.
    pub fn new(n: u64, seed: u64) -> Self {
        let mut t = Table {
            slots: vec![0; (2 * n as usize).next_power_of_two().max(16)],
            records: Vec::with_capacity(n as usize),
            damaged: 0,
        };
        for i in 0..n {
            t.insert(i, seed ^ i);
        }
        t
    }

    /// Records held.
    pub fn len(&self) -> u64 {
        self.records.len() as u64
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    fn find(&self, key: u64) -> Option<usize> {
        let mask = self.slots.len() - 1;
        let mut s = key as usize & mask;
        loop {
            match self.slots[s] {
                0 => return None,
                r if self.records[r as usize - 1].key == key => return Some(r as usize - 1),
                _ => s = (s + 1) & mask,
            }
        }
    }

    fn place(slots: &mut [u32], key: u64, r: u32) {
        let mask = slots.len() - 1;
        let mut s = key as usize & mask;
        while slots[s] != 0 {
            s = (s + 1) & mask;
        }
        slots[s] = r;
    }

    /// Inserts record number `i` (its fields from `seed`) unless present;
    /// returns `i`.
    pub fn insert(&mut self, i: u64, seed: u64) -> u64 {
        let key = key_of(i);
        if self.find(key).is_some() {
            return i;
        }
        if 2 * (self.records.len() + 1) > self.slots.len() {
            let mut slots = vec![0; self.slots.len() * 2];
            for (r, rec) in self.records.iter().enumerate() {
                Self::place(&mut slots, rec.key, r as u32 + 1);
            }
            self.slots = slots;
        }
        self.records.push(Record::new(key, seed));
        Self::place(&mut self.slots, key, self.records.len() as u32);
        i
    }

    /// Reads every field of record number `i`, as a reply would copy them:
    /// its key if present and intact, 0 otherwise.
    pub fn get(&mut self, i: u64) -> u64 {
        match self.find(key_of(i)) {
            Some(r) if self.records[r].intact() => self.records[r].key,
            Some(_) => {
                self.damaged += 1;
                0
            }
            None => 0,
        }
    }

    /// Overwrites one field of record number `i`: its key if present.
    pub fn update(&mut self, i: u64, field: usize, seed: u64) -> u64 {
        let Some(r) = self.find(key_of(i)) else {
            return 0;
        };
        let rec = &mut self.records[r];
        if !rec.intact() {
            self.damaged += 1;
            return 0;
        }
        fill(&mut rec.data, Some(field % FIELDS), seed);
        rec.version += 1;
        rec.sum = checksum(rec.key, rec.version, &rec.data);
        rec.key
    }

    /// Reads records `start..start + len` (those present): how many.
    pub fn scan(&mut self, start: u64, len: u64) -> u64 {
        (start..start + len).filter(|&i| self.get(i) != 0).count() as u64
    }

    /// Every record findable by its key and intact, and no slot pointing
    /// nowhere: what is wrong, if anything.
    pub fn check(&self) -> Vec<String> {
        let mut v = Vec::new();
        let used = self.slots.iter().filter(|&&s| s != 0).count();
        if used != self.records.len() {
            v.push(format!(
                "{used} slots used for {} records",
                self.records.len()
            ));
        }
        for (r, rec) in self.records.iter().enumerate() {
            if self.find(rec.key) != Some(r) {
                v.push(format!("record {r} is not found by its key"));
            }
            if !rec.intact() {
                v.push(format!("record {r} fails its checksum"));
            }
            if v.len() >= 5 {
                break;
            }
        }
        v
    }

    /// Test hook: flips a byte of record `r`'s fields.
    #[doc(hidden)]
    pub fn corrupt(&mut self, r: usize) {
        self.records[r].data[7] ^= 0x5a;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_updates_inserts_scans_and_growth() {
        let mut t = Table::new(100, 9);
        assert_eq!(t.len(), 100);
        assert_eq!(t.get(42), key_of(42));
        assert_eq!(t.get(100), 0, "not there");
        assert_eq!(t.update(42, 3, 77), key_of(42));
        assert_eq!(t.get(42), key_of(42), "intact after the update");
        for i in 100..300 {
            t.insert(i, i);
        }
        assert_eq!(t.len(), 300);
        assert_eq!(t.scan(290, 20), 10);
        assert!(t.check().is_empty(), "{:?}", t.check());
        assert_eq!(t.damaged, 0);
    }

    #[test]
    fn a_corrupted_record_is_found_by_reads_and_by_the_check() {
        let mut t = Table::new(50, 1);
        t.corrupt(7);
        assert!(!t.check().is_empty());
        let r7 = (0..50).find(|&i| key_of(i) == t.records[7].key).unwrap();
        assert_eq!(t.get(r7), 0);
        assert_eq!(t.damaged, 1);
    }
}
