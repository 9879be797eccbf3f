//! Strings numbered in the order first seen, kept in one arena: a million distinct frames cost their bytes, an
//! end offset and a slot of an open-addressing table (4 bytes, half of them empty), not a String and a hash
//! map entry each. Exact: a slot's string is compared byte for byte.

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    // FNV's low bits follow its input's low bits: a multiply spreads every bit into the high ones, which the table
    // takes
    h.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(32)
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

/// Pairs of numbers (a callers text's and a leaf's) numbered in the order first seen: an open-addressing table of
/// 8-byte keys, no string hashed or compared.
pub struct Pairs {
    keys: Vec<u64>,   // each pair, by its number
    slots: Vec<u32>,  // a pair's number + 1, or 0 for an empty slot; a power of two, at most half full
}

impl Default for Pairs {
    fn default() -> Self {
        Pairs { keys: Vec::new(), slots: vec![0; 1 << 10] }
    }
}

fn mix(key: u64) -> usize {
    let h = key.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h ^ (h >> 32)) as usize
}

impl Pairs {
    pub fn get(&self, i: u32) -> (u32, u32) {
        let key = self.keys[i as usize];
        ((key >> 32) as u32, key as u32)
    }

    fn slot(&self, key: u64) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let mut at = mix(key) & mask;
        loop {
            match self.slots[at] {
                0 => return Err(at),
                n if self.keys[n as usize - 1] == key => return Ok(n - 1),
                _ => at = (at + 1) & mask,
            }
        }
    }

    pub fn find(&self, first: u32, second: u32) -> Option<u32> {
        self.slot((first as u64) << 32 | second as u64).ok()
    }

    /// (its number, whether it is new) of the pair.
    pub fn intern(&mut self, first: u32, second: u32) -> (u32, bool) {
        let key = (first as u64) << 32 | second as u64;
        let at = match self.slot(key) {
            Ok(n) => return (n, false),
            Err(at) => at,
        };
        self.keys.push(key);
        let n = self.keys.len() as u32;
        self.slots[at] = n;
        if 2 * self.keys.len() > self.slots.len() {
            let mut slots = vec![0u32; 2 * self.slots.len()];
            let mask = slots.len() - 1;
            for (i, &key) in self.keys.iter().enumerate() {
                let mut at = mix(key) & mask;
                while slots[at] != 0 {
                    at = (at + 1) & mask;
                }
                slots[at] = i as u32 + 1;
            }
            self.slots = slots;
        }
        (n - 1, true)
    }
}
