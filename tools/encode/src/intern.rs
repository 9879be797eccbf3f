//! Strings numbered in the order first seen, kept in one arena: a million distinct frames cost their bytes, an
//! end offset and a slot of an open-addressing table (4 bytes, half of them empty), not a String and a hash
//! map entry each. Exact: a slot's string is compared byte for byte.

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h ^ (h >> 29)
}

pub struct Interner {
    arena: Vec<u8>,
    ends: Vec<usize>, // string i is arena[ends[i - 1]..ends[i]] (from 0 for the first)
    slots: Vec<u32>,  // a string's number + 1, or 0 for an empty slot; a power of two, at most half full
}

impl Default for Interner {
    fn default() -> Self {
        Interner { arena: Vec::new(), ends: Vec::new(), slots: vec![0; 1 << 10] }
    }
}

impl Interner {
    pub fn get(&self, i: u32) -> &[u8] {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.arena[start..self.ends[i]]
    }

    pub fn len(&self) -> u32 {
        self.ends.len() as u32
    }

    /// s's number, if it has one; else the empty slot where it would go (Err).
    fn slot(&self, s: &[u8]) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let mut at = fnv1a(s) as usize & mask;
        loop {
            match self.slots[at] {
                0 => return Err(at),
                n if self.get(n - 1) == s => return Ok(n - 1),
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// s's number, if it has one.
    pub fn find(&self, s: &[u8]) -> Option<u32> {
        self.slot(s).ok()
    }

    /// (its number, whether it is new) of s.
    pub fn intern(&mut self, s: &[u8]) -> (u32, bool) {
        let at = match self.slot(s) {
            Ok(n) => return (n, false),
            Err(at) => at,
        };
        self.arena.extend_from_slice(s);
        self.ends.push(self.arena.len());
        let n = self.ends.len() as u32;
        self.slots[at] = n;
        if 2 * self.ends.len() > self.slots.len() {
            self.grow();
        }
        (n - 1, true)
    }

    fn grow(&mut self) {
        let mut slots = vec![0u32; 2 * self.slots.len()];
        let mask = slots.len() - 1;
        for n in 1..=self.ends.len() as u32 {
            let mut at = fnv1a(self.get(n - 1)) as usize & mask;
            while slots[at] != 0 {
                at = (at + 1) & mask;
            }
            slots[at] = n;
        }
        self.slots = slots;
    }
}
