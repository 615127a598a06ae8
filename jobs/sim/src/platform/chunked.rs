//! A vector kept in fixed-size chunks, for the platform's posts.
//!
//! A `Vec` that doubles moves everything it holds when it grows: for a
//! moment the old and the new buffer are both resident. At a million
//! agents the posts reach millions by the end of a week, and that moment
//! alone added about a gigabyte to the peak. Here only the first chunk
//! grows as a `Vec` does (so a small platform stays small); every later
//! one is allocated whole and never moves.

use serde::{Deserialize, Serialize};

/// Items per chunk (a power of two, so an index splits with a shift).
const CHUNK_BITS: u32 = 16;
const CHUNK: usize = 1 << CHUNK_BITS;

/// Indexed like a `Vec`, grown only at the end.
#[derive(Debug, Clone, PartialEq)]
pub struct Chunked<T>(Vec<Vec<T>>);

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked(Vec::new())
    }
}

impl<T> Chunked<T> {
    pub fn len(&self) -> usize {
        self.0.last().map_or(0, |last| (self.0.len() - 1) * CHUNK + last.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn push(&mut self, item: T) {
        match self.0.last_mut() {
            Some(last) if last.len() < CHUNK => last.push(item),
            _ => {
                let mut chunk = Vec::with_capacity(if self.0.is_empty() { 0 } else { CHUNK });
                chunk.push(item);
                self.0.push(chunk);
            }
        }
    }
    pub fn get(&self, index: usize) -> Option<&T> {
        self.0.get(index >> CHUNK_BITS)?.get(index & (CHUNK - 1))
    }
    pub fn get_mut(&mut self, index: usize) -> Option<&mut T> {
        self.0.get_mut(index >> CHUNK_BITS)?.get_mut(index & (CHUNK - 1))
    }
    /// Heap bytes held (the chunks' capacities).
    pub fn heap_bytes(&self) -> usize {
        self.0.capacity() * size_of::<Vec<T>>() + self.0.iter().map(|c| c.capacity() * size_of::<T>()).sum::<usize>()
    }
    /// In index order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &T> {
        self.0.iter().flatten()
    }
}

impl<T: Serialize> Serialize for Chunked<T> {
    /// As the flat sequence a `Vec` would write.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Chunked<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut out = Chunked::default();
        Vec::<T>::deserialize(deserializer)?.into_iter().for_each(|item| out.push(item));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_across_chunks_as_a_vec_does() {
        let mut chunked = Chunked::default();
        let n = 2 * CHUNK + 3;
        (0..n).for_each(|i| chunked.push(i));
        assert_eq!((chunked.len(), chunked.0.len()), (n, 3));
        for i in [0, 1, CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK, n - 1] {
            assert_eq!(chunked.get(i), Some(&i));
        }
        assert_eq!(chunked.get(n), None);
        *chunked.get_mut(CHUNK).unwrap() = 7;
        assert_eq!(chunked.iter().nth(CHUNK), Some(&7));
        assert_eq!(chunked.iter().next_back(), Some(&(n - 1)));
        assert!(chunked.0.iter().all(|c| c.capacity() == CHUNK), "a chunk holds no more than its share");
        let json = serde_json::to_string(&chunked).unwrap();
        assert_eq!(serde_json::from_str::<Chunked<usize>>(&json).unwrap(), chunked);
        assert_eq!(serde_json::from_str::<Vec<usize>>(&json).unwrap().len(), n, "written as a flat sequence");
    }
}
