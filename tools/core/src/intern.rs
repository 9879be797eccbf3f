//! Strings numbered in the order first seen, kept in one arena: a million distinct frames cost their bytes, a
//! record's header and an 8-byte slot of an open-addressing table (half of them empty), not a String and a hash
//! map entry each. Exact: a string is compared byte for byte with the one its slot points to.
//!
//! A slot holds a tag of the string's hash and where its record starts in the arena (`NUMBER LEN NOTE BYTES`,
//! 4, 4 and 8 bytes then the string's), so a look-up reads the slot and, when the tags agree, that one record: two
//! places in memory for a string found, one for a string new, which is what a million distinct frames cost. A
//! record's note is the caller's (one_side.rs keeps there the stack a leaf was first seen in), read and written
//! where the look-up has just been.

/// A hash of the bytes, 8 at a time.
fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut h = bytes.len() as u64;
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        h = (h.rotate_left(5) ^ u64::from_le_bytes(w.try_into().unwrap())).wrapping_mul(K);
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    h = (h.rotate_left(5) ^ u64::from_le_bytes(last)).wrapping_mul(K);
    h ^ (h >> 29)
}

pub struct Interner {
    arena: Vec<u8>,
    starts: Vec<u32>, // string i's record starts at arena[starts[i]]
    slots: Vec<u64>,  // (tag | 1) << 32 | the record's start, or 0 for an empty slot; a power of two, at most half full
}

impl Default for Interner {
    fn default() -> Self {
        Interner { arena: Vec::new(), starts: Vec::new(), slots: vec![0; 1 << 10] }
    }
}

const HEAD: usize = 16;

impl Interner {
    fn record(&self, at: usize) -> (u32, &[u8]) {
        let number = u32::from_le_bytes(self.arena[at..at + 4].try_into().unwrap());
        let len = u32::from_le_bytes(self.arena[at + 4..at + 8].try_into().unwrap()) as usize;
        (number, &self.arena[at + HEAD..at + HEAD + len])
    }

    pub fn get(&self, i: u32) -> &[u8] {
        self.record(self.starts[i as usize] as usize).1
    }

    /// The bytes its records take.
    pub fn bytes(&self) -> usize {
        self.arena.len()
    }

    pub fn len(&self) -> u32 {
        self.starts.len() as u32
    }

    /// The note of the record at `at` (0 until set).
    pub fn note(&self, at: usize) -> u64 {
        u64::from_le_bytes(self.arena[at + 8..at + 16].try_into().unwrap())
    }

    pub fn set_note(&mut self, at: usize, note: u64) {
        self.arena[at + 8..at + 16].copy_from_slice(&note.to_le_bytes());
    }

    /// s's number and where its record starts, if it has one; else the empty slot where it would go (Err).
    fn slot(&self, s: &[u8], h: u64) -> Result<(u32, usize), usize> {
        let mask = self.slots.len() - 1;
        let tag = (h >> 32 | 1) << 32;
        let mut at = h as usize & mask;
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                return Err(at);
            }
            if slot & !0xffff_ffff == tag {
                let (number, bytes) = self.record((slot & 0xffff_ffff) as usize);
                if bytes == s {
                    return Ok((number, (slot & 0xffff_ffff) as usize));
                }
            }
            at = (at + 1) & mask;
        }
    }

    /// (its number, whether it is new) of s.
    pub fn intern(&mut self, s: &[u8]) -> (u32, bool) {
        let (n, new, _) = self.intern_at(s);
        (n, new)
    }

    /// (its number, whether it is new, where its record starts) of s.
    pub fn intern_at(&mut self, s: &[u8]) -> (u32, bool, usize) {
        let h = hash(s);
        let at = match self.slot(s, h) {
            Ok((n, start)) => return (n, false, start),
            Err(at) => at,
        };
        let n = self.starts.len() as u32;
        let start = self.arena.len();
        assert!(start + HEAD + s.len() <= u32::MAX as usize, "distinct strings of 4 GiB or more");
        self.arena.extend_from_slice(&n.to_le_bytes());
        self.arena.extend_from_slice(&(s.len() as u32).to_le_bytes());
        self.arena.extend_from_slice(&0u64.to_le_bytes());
        self.arena.extend_from_slice(s);
        self.starts.push(start as u32);
        self.slots[at] = (h >> 32 | 1) << 32 | start as u64;
        if 2 * self.starts.len() > self.slots.len() {
            self.grow();
        }
        (n, true, start)
    }

    fn grow(&mut self) {
        let mut slots = vec![0u64; 2 * self.slots.len()];
        let mask = slots.len() - 1;
        for &start in &self.starts {
            let (_, bytes) = self.record(start as usize);
            let h = hash(bytes);
            let mut at = h as usize & mask;
            while slots[at] != 0 {
                at = (at + 1) & mask;
            }
            slots[at] = (h >> 32 | 1) << 32 | start as u64;
        }
        self.slots = slots;
    }
}
