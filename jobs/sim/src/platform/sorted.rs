//! Small ordered sets and maps as sorted vectors, for the platform's many
//! tiny collections (a post's likes and reblogs, an agent's follows, the
//! posts it was shown or engaged with).
//!
//! A `BTreeSet` allocates a whole node (eleven slots and their links) for
//! its first element, and almost every post has a like or two: at a
//! million agents those nodes were most of what the platform added per
//! turn. A sorted vector holds what it holds and keeps the order a
//! B-tree would iterate in, so the state's digest does not change.
//!
//! They grow by an eighth ([`make_room`]), not by doubling: a doubled
//! vector is a quarter empty on average, and these are most of what a
//! million agents' platform holds.

use serde::{Deserialize, Serialize};

/// Room in `items` for one more, growing it by an eighth (at least one)
/// when full. The allocator's size classes are about an eighth apart, so
/// most of these reallocations stay in place.
pub fn make_room<T>(items: &mut Vec<T>) {
    if items.len() == items.capacity() {
        items.reserve_exact((items.len() / 8).max(1));
    }
}

/// Adds `new` (in any order) to `items` (ascending by `key`) as inserting
/// each in turn would (a repeated key keeps the last value), in one pass:
/// one by one, each moves the vector's tail, and a post that thousands of
/// agents like in one turn made those moves most of applying the turn.
fn insert_all<T, K: Ord>(items: &mut Vec<T>, mut new: Vec<T>, key: impl Fn(&T) -> K) {
    new.reverse();
    new.sort_by_key(&key);
    new.dedup_by(|later, earlier| key(later) == key(earlier));
    let Some(first) = new.first() else { return };
    if items.last().is_none_or(|last| key(last) < key(first)) {
        if items.capacity() - items.len() < new.len() {
            items.reserve_exact(new.len().max(items.len() / 8));
        }
        items.extend(new);
        return;
    }
    let total = items.len() + new.len();
    let mut merged = Vec::with_capacity(total + total / 8);
    let (mut old, mut new) = (std::mem::take(items).into_iter().peekable(), new.into_iter().peekable());
    while let (Some(o), Some(n)) = (old.peek(), new.peek()) {
        match key(o).cmp(&key(n)) {
            std::cmp::Ordering::Less => merged.extend(old.next()),
            std::cmp::Ordering::Greater => merged.extend(new.next()),
            std::cmp::Ordering::Equal => {
                old.next();
                merged.extend(new.next());
            }
        }
    }
    merged.extend(old);
    merged.extend(new);
    *items = merged;
}

/// A set kept as an ascending vector without repeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Vec<T>", into = "Vec<T>")]
#[serde(bound(serialize = "T: Serialize + Clone", deserialize = "T: Deserialize<'de> + Ord"))]
pub struct SortedSet<T>(Vec<T>);

impl<T> SortedSet<T> {
    pub const fn new() -> Self {
        SortedSet(Vec::new())
    }
    /// Heap bytes held (the capacity's).
    pub fn heap_bytes(&self) -> usize {
        self.0.capacity() * size_of::<T>()
    }
}

impl<T> Default for SortedSet<T> {
    fn default() -> Self {
        SortedSet::new()
    }
}

impl<T: Ord> SortedSet<T> {
    /// Adds `item`; false if it was already there.
    pub fn insert(&mut self, item: T) -> bool {
        match self.0.binary_search(&item) {
            Ok(_) => false,
            Err(at) => {
                make_room(&mut self.0);
                self.0.insert(at, item);
                true
            }
        }
    }
    pub fn remove(&mut self, item: &T) -> bool {
        match self.0.binary_search(item) {
            Ok(at) => {
                self.0.remove(at);
                true
            }
            Err(_) => false,
        }
    }
    pub fn contains(&self, item: &T) -> bool {
        self.0.binary_search(item).is_ok()
    }
    /// Adds many at once, in one pass (see [`insert_all`]).
    pub fn insert_all(&mut self, items: Vec<T>)
    where
        T: Copy,
    {
        insert_all(&mut self.0, items, |i| *i);
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Ascending.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }
}

impl<T: Ord> Extend<T> for SortedSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        let items = items.into_iter();
        self.0.reserve_exact(items.size_hint().0);
        items.for_each(|i| {
            self.insert(i);
        });
    }
}

impl<T: Ord> From<Vec<T>> for SortedSet<T> {
    fn from(mut items: Vec<T>) -> Self {
        items.sort();
        items.dedup();
        SortedSet(items)
    }
}

impl<T> From<SortedSet<T>> for Vec<T> {
    fn from(set: SortedSet<T>) -> Self {
        set.0
    }
}

impl<'a, T> IntoIterator for &'a SortedSet<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// A map kept as a vector of entries ascending by key, keys unique.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Vec<(K, V)>", into = "Vec<(K, V)>")]
#[serde(bound(serialize = "K: Serialize + Clone, V: Serialize + Clone", deserialize = "K: Deserialize<'de> + Ord, V: Deserialize<'de>"))]
pub struct SortedMap<K, V>(Vec<(K, V)>);

impl<K, V> SortedMap<K, V> {
    pub const fn new() -> Self {
        SortedMap(Vec::new())
    }
    /// Heap bytes held (the capacity's).
    pub fn heap_bytes(&self) -> usize {
        self.0.capacity() * size_of::<(K, V)>()
    }
}

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap::new()
    }
}

impl<K: Ord, V> SortedMap<K, V> {
    fn find(&self, key: &K) -> Result<usize, usize> {
        self.0.binary_search_by(|(k, _)| k.cmp(key))
    }
    /// Sets `key` to `value`; returns the value it replaces.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(&key) {
            Ok(at) => Some(std::mem::replace(&mut self.0[at].1, value)),
            Err(at) => {
                make_room(&mut self.0);
                self.0.insert(at, (key, value));
                None
            }
        }
    }
    /// Sets many entries at once, in one pass (see [`insert_all`]).
    pub fn insert_all(&mut self, entries: Vec<(K, V)>)
    where
        K: Copy,
    {
        insert_all(&mut self.0, entries, |(k, _)| *k);
    }
    pub fn get(&self, key: &K) -> Option<&V> {
        self.find(key).ok().map(|at| &self.0[at].1)
    }
    pub fn contains_key(&self, key: &K) -> bool {
        self.find(key).is_ok()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Ascending by key.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (&K, &V)> {
        self.0.iter().map(|(k, v)| (k, v))
    }
    pub fn keys(&self) -> impl DoubleEndedIterator<Item = &K> {
        self.0.iter().map(|(k, _)| k)
    }
}

impl<K: Ord, V> From<Vec<(K, V)>> for SortedMap<K, V> {
    /// Of repeated keys, the last entry wins, as with inserting in order.
    fn from(mut entries: Vec<(K, V)>) -> Self {
        entries.reverse();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries.dedup_by(|later, earlier| later.0 == earlier.0);
        SortedMap(entries)
    }
}

impl<K, V> From<SortedMap<K, V>> for Vec<(K, V)> {
    fn from(map: SortedMap<K, V>) -> Self {
        map.0
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use rand::{Rng, SeedableRng};

    use super::*;

    #[test]
    fn a_growing_set_keeps_an_eighth_spare_at_most() {
        let mut set = SortedSet::default();
        for i in 0..1000usize {
            set.insert(i);
            let len = set.len();
            assert!(set.0.capacity() <= len + len / 8 + 1, "{len} items, capacity {}", set.0.capacity());
        }
        let mut seen = SortedSet::default();
        seen.extend([5, 3, 9]);
        assert_eq!(seen.0.capacity(), 3, "an extension reserves what it adds");
    }

    #[test]
    fn sorted_vectors_behave_as_the_btrees_they_replace() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let (mut set, mut btree_set) = (SortedSet::default(), BTreeSet::new());
        let (mut map, mut btree_map) = (SortedMap::default(), BTreeMap::new());
        for i in 0..2_000u32 {
            let k = rng.random_range(0..300u32);
            match rng.random_range(0..3) {
                0 => assert_eq!(set.remove(&k), btree_set.remove(&k)),
                _ => assert_eq!(set.insert(k), btree_set.insert(k)),
            }
            assert_eq!(map.insert(k, i), btree_map.insert(k, i));
            assert_eq!(
                (set.contains(&k), map.get(&k), map.contains_key(&(k + 1))),
                (btree_set.contains(&k), btree_map.get(&k), btree_map.contains_key(&(k + 1)))
            );
        }
        assert!(set.iter().eq(btree_set.iter()) && set.len() == btree_set.len());
        for round in 0..50u32 {
            let batch: Vec<u32> = (0..rng.random_range(0..40)).map(|_| rng.random_range(0..400u32)).collect();
            let entries: Vec<(u32, u32)> = batch.iter().map(|k| (*k, round * 100 + k % 7)).collect();
            set.insert_all(batch.clone());
            btree_set.extend(batch);
            map.insert_all(entries.clone());
            btree_map.extend(entries);
            assert!(set.iter().eq(btree_set.iter()), "round {round}");
            assert!(map.iter().eq(btree_map.iter()), "round {round}");
        }
        set.insert_all(vec![1001, 1000, 1001]);
        btree_set.extend([1001, 1000]);
        assert!(set.iter().eq(btree_set.iter()), "added past the end");
        assert!(map.iter().eq(btree_map.iter()) && map.keys().eq(btree_map.keys()));
        let json = serde_json::to_string(&map).unwrap();
        assert_eq!(serde_json::from_str::<SortedMap<u32, u32>>(&json).unwrap(), map);
        let unsorted: SortedSet<u32> = serde_json::from_str("[5, 1, 5, 3]").unwrap();
        assert_eq!(unsorted.iter().copied().collect::<Vec<_>>(), [1, 3, 5], "what is read is put in order");
        let repeated: SortedMap<u32, char> = vec![(2, 'a'), (1, 'b'), (2, 'c')].into();
        assert_eq!(repeated.iter().collect::<Vec<_>>(), [(&1, &'b'), (&2, &'c')], "the last of a repeated key wins");
    }
}
