//! NumPy `.npy` files as the SoMe release stores embeddings: plain `[N, D]`
//! float arrays, and 0-d object arrays holding a pickled dict of vectors
//! (`np.save(path, {id: vector})`).
//!
//! Only the part of the pickle format that `np.save` produces is read (a
//! small stack machine over protocols 2-5); anything else is refused with the
//! opcode and offset, never executed.

use std::collections::HashMap;

/// A decoded `.npy` payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Npy {
    /// A numeric array, row-major, converted to f32.
    Matrix { shape: Vec<usize>, data: Vec<f32> },
    /// A pickled object: dicts, lists, strings, numbers and numeric arrays.
    Object(PyValue),
}

/// The Python values a pickled embedding dict is made of.
#[derive(Debug, Clone, PartialEq)]
pub enum PyValue {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
    List(Vec<PyValue>),
    Tuple(Vec<PyValue>),
    Dict(Vec<(PyValue, PyValue)>),
    /// A numeric ndarray (as f32) or an object ndarray (`objects`).
    Array {
        shape: Vec<usize>,
        data: Vec<f32>,
        objects: Vec<PyValue>,
    },
    /// Internal: a global reference, a dtype, or a pending reduce.
    Global(String),
    Dtype(String),
    Reduce(Box<PyValue>, Vec<PyValue>),
}

impl PyValue {
    pub fn as_str(&self) -> Option<&str> {
        if let PyValue::Str(s) = self { Some(s) } else { None }
    }

    /// A 1-D vector: a numeric array or a list of numbers.
    pub fn as_vector(&self) -> Option<Vec<f32>> {
        match self {
            PyValue::Array { data, objects, .. } if objects.is_empty() => Some(data.clone()),
            PyValue::List(items) => items
                .iter()
                .map(|v| match v {
                    PyValue::Float(f) => Some(*f as f32),
                    PyValue::Int(i) => Some(*i as f32),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    }

    /// Unwraps a 0-d object array (what `np.save` makes of a dict).
    pub fn unwrap_object_array(self) -> PyValue {
        match self {
            PyValue::Array { mut objects, shape, .. } if shape.is_empty() && objects.len() == 1 => objects.remove(0),
            other => other,
        }
    }
}

const MAGIC: &[u8] = b"\x93NUMPY";

/// Parses a `.npy` file's bytes.
pub fn parse(bytes: &[u8]) -> Result<Npy, String> {
    if !bytes.starts_with(MAGIC) || bytes.len() < 10 {
        return Err("not a .npy file (bad magic)".into());
    }
    let major = bytes[6];
    let (header_len, start) = match major {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 => {
            let b = bytes.get(8..12).ok_or("truncated header")?;
            (u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 12)
        }
        v => return Err(format!("unsupported .npy version {v}")),
    };
    let header = bytes.get(start..start + header_len).ok_or("truncated header")?;
    let header = std::str::from_utf8(header).map_err(|_| "the header is not text")?;
    let descr = header_value(header, "descr").ok_or("the header has no descr")?;
    let descr = descr.trim_matches(|c| c == '\'' || c == '"');
    if header_value(header, "fortran_order").is_some_and(|v| v.starts_with("True")) {
        return Err("Fortran-ordered arrays are not supported".into());
    }
    let shape = parse_shape(&header_value(header, "shape").ok_or("the header has no shape")?)?;
    let body = &bytes[start + header_len..];
    if descr == "|O" {
        let value = Unpickler::new(body).run()?;
        return Ok(Npy::Object(value.unwrap_object_array()));
    }
    let count: usize = shape.iter().product();
    let data = decode_numbers(descr, body, count)?;
    Ok(Npy::Matrix { shape, data })
}

fn header_value(header: &str, key: &str) -> Option<String> {
    let at = header.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = if rest.starts_with('(') { rest.find(')')? + 1 } else { rest.find(',').unwrap_or(rest.len()) };
    Some(rest[..end].trim().to_string())
}

fn parse_shape(text: &str) -> Result<Vec<usize>, String> {
    text.trim_matches(|c| c == '(' || c == ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().map_err(|_| format!("bad shape {text}")))
        .collect()
}

/// Decodes little-endian numbers of a NumPy type code into f32.
fn decode_numbers(descr: &str, body: &[u8], count: usize) -> Result<Vec<f32>, String> {
    let kind = descr.trim_start_matches(['<', '|', '=']);
    if descr.starts_with('>') {
        return Err(format!("big-endian arrays ({descr}) are not supported"));
    }
    let width = match kind {
        "f4" => 4,
        "f2" => 2,
        "f8" => 8,
        other => return Err(format!("unsupported element type {other:?}; expected f2, f4 or f8")),
    };
    let need = count * width;
    let body = body.get(..need).ok_or_else(|| format!("the data is truncated: {} of {need} bytes", body.len()))?;
    Ok(body
        .chunks_exact(width)
        .map(|c| match width {
            4 => f32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            2 => half::f16::from_le_bytes([c[0], c[1]]).to_f32(),
            _ => f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) as f32,
        })
        .collect())
}

enum Item {
    Mark,
    Value(PyValue),
}

struct Unpickler<'a> {
    bytes: &'a [u8],
    pos: usize,
    stack: Vec<Item>,
    memo: HashMap<u32, PyValue>,
}

impl<'a> Unpickler<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Unpickler { bytes, pos: 0, stack: Vec::new(), memo: HashMap::new() }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let out = self.bytes.get(self.pos..self.pos + n).ok_or_else(|| format!("pickle truncated at offset {}", self.pos))?;
        self.pos += n;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    fn line(&mut self) -> Result<String, String> {
        let rest = &self.bytes[self.pos..];
        let end = rest.iter().position(|b| *b == b'\n').ok_or("unterminated line in pickle")?;
        self.pos += end + 1;
        String::from_utf8(rest[..end].to_vec()).map_err(|_| "non-UTF-8 name in pickle".into())
    }

    fn text(&mut self, n: usize) -> Result<PyValue, String> {
        let b = self.take(n)?;
        Ok(PyValue::Str(String::from_utf8(b.to_vec()).map_err(|_| "invalid UTF-8 string in pickle")?))
    }

    fn push(&mut self, v: PyValue) {
        self.stack.push(Item::Value(v));
    }

    fn pop(&mut self) -> Result<PyValue, String> {
        match self.stack.pop() {
            Some(Item::Value(v)) => Ok(v),
            _ => Err(format!("pickle stack underflow at offset {}", self.pos)),
        }
    }

    fn pop_mark(&mut self) -> Result<Vec<PyValue>, String> {
        let mut items = Vec::new();
        loop {
            match self.stack.pop() {
                Some(Item::Mark) => break,
                Some(Item::Value(v)) => items.push(v),
                None => return Err("pickle mark missing".into()),
            }
        }
        items.reverse();
        Ok(items)
    }

    fn top(&mut self) -> Result<&mut PyValue, String> {
        match self.stack.last_mut() {
            Some(Item::Value(v)) => Ok(v),
            _ => Err("pickle stack underflow".into()),
        }
    }

    fn run(mut self) -> Result<PyValue, String> {
        loop {
            let at = self.pos;
            let op = self.u8()?;
            match op {
                0x80 => {
                    self.u8()?;
                }
                0x95 => {
                    self.u64()?;
                }
                b'.' => return self.pop(),
                b'(' => self.stack.push(Item::Mark),
                b'N' => self.push(PyValue::None),
                0x88 => self.push(PyValue::Bool(true)),
                0x89 => self.push(PyValue::Bool(false)),
                b'K' => {
                    let v = self.u8()?;
                    self.push(PyValue::Int(v.into()))
                }
                b'M' => {
                    let b = self.take(2)?;
                    self.push(PyValue::Int(u16::from_le_bytes([b[0], b[1]]).into()))
                }
                b'J' => {
                    let v = self.u32()? as i32;
                    self.push(PyValue::Int(v.into()))
                }
                0x8a => {
                    let n = self.u8()? as usize;
                    let b = self.take(n)?;
                    if n > 8 {
                        return Err("integer too large in pickle".into());
                    }
                    let mut buf = [if b.last().is_some_and(|x| x & 0x80 != 0) { 0xff } else { 0 }; 8];
                    buf[..n].copy_from_slice(b);
                    self.push(PyValue::Int(i64::from_le_bytes(buf)))
                }
                b'G' => {
                    let b = self.take(8)?;
                    self.push(PyValue::Float(f64::from_be_bytes(b.try_into().expect("8 bytes"))))
                }
                0x8c => {
                    let n = self.u8()? as usize;
                    let v = self.text(n)?;
                    self.push(v)
                }
                b'X' => {
                    let n = self.u32()? as usize;
                    let v = self.text(n)?;
                    self.push(v)
                }
                0x8d => {
                    let n = self.u64()? as usize;
                    let v = self.text(n)?;
                    self.push(v)
                }
                b'U' => {
                    let n = self.u8()? as usize;
                    let b = self.take(n)?.to_vec();
                    self.push(PyValue::Bytes(b))
                }
                b'C' => {
                    let n = self.u8()? as usize;
                    let b = self.take(n)?.to_vec();
                    self.push(PyValue::Bytes(b))
                }
                b'B' | b'T' => {
                    let n = self.u32()? as usize;
                    let b = self.take(n)?.to_vec();
                    self.push(PyValue::Bytes(b))
                }
                0x8e => {
                    let n = self.u64()? as usize;
                    let b = self.take(n)?.to_vec();
                    self.push(PyValue::Bytes(b))
                }
                b']' => self.push(PyValue::List(Vec::new())),
                b'}' => self.push(PyValue::Dict(Vec::new())),
                b')' => self.push(PyValue::Tuple(Vec::new())),
                b't' => {
                    let items = self.pop_mark()?;
                    self.push(PyValue::Tuple(items))
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    let mut items: Vec<PyValue> = (0..n).map(|_| self.pop()).collect::<Result<_, _>>()?;
                    items.reverse();
                    self.push(PyValue::Tuple(items))
                }
                b'a' => {
                    let v = self.pop()?;
                    match self.top()? {
                        PyValue::List(l) => l.push(v),
                        _ => return Err(format!("APPEND to a non-list at offset {at}")),
                    }
                }
                b'e' => {
                    let items = self.pop_mark()?;
                    match self.top()? {
                        PyValue::List(l) => l.extend(items),
                        _ => return Err(format!("APPENDS to a non-list at offset {at}")),
                    }
                }
                b's' => {
                    let v = self.pop()?;
                    let k = self.pop()?;
                    match self.top()? {
                        PyValue::Dict(d) => d.push((k, v)),
                        _ => return Err(format!("SETITEM on a non-dict at offset {at}")),
                    }
                }
                b'u' => {
                    let items = self.pop_mark()?;
                    if items.len() % 2 != 0 {
                        return Err(format!("odd SETITEMS at offset {at}"));
                    }
                    let mut pairs = Vec::with_capacity(items.len() / 2);
                    let mut it = items.into_iter();
                    while let (Some(k), Some(v)) = (it.next(), it.next()) {
                        pairs.push((k, v));
                    }
                    match self.top()? {
                        PyValue::Dict(d) => d.extend(pairs),
                        _ => return Err(format!("SETITEMS on a non-dict at offset {at}")),
                    }
                }
                0x94 => {
                    let v = match self.stack.last() {
                        Some(Item::Value(v)) => v.clone(),
                        _ => return Err("MEMOIZE on an empty stack".into()),
                    };
                    let id = self.memo.len() as u32;
                    self.memo.insert(id, v);
                }
                b'q' | b'r' => {
                    let id = if op == b'q' { self.u8()? as u32 } else { self.u32()? };
                    let v = match self.stack.last() {
                        Some(Item::Value(v)) => v.clone(),
                        _ => return Err("PUT on an empty stack".into()),
                    };
                    self.memo.insert(id, v);
                }
                b'h' | b'j' => {
                    let id = if op == b'h' { self.u8()? as u32 } else { self.u32()? };
                    let v = self.memo.get(&id).cloned().ok_or_else(|| format!("unknown memo {id} at offset {at}"))?;
                    self.push(v)
                }
                b'c' => {
                    let module = self.line()?;
                    let name = self.line()?;
                    self.push(PyValue::Global(format!("{module}.{name}")))
                }
                0x93 => {
                    let name = self.pop()?;
                    let module = self.pop()?;
                    match (module, name) {
                        (PyValue::Str(m), PyValue::Str(n)) => self.push(PyValue::Global(format!("{m}.{n}"))),
                        _ => return Err(format!("STACK_GLOBAL without names at offset {at}")),
                    }
                }
                b'R' | 0x81 => {
                    let args = match self.pop()? {
                        PyValue::Tuple(a) => a,
                        _ => return Err(format!("REDUCE without an argument tuple at offset {at}")),
                    };
                    let func = self.pop()?;
                    let v = reduce(func, args)?;
                    self.push(v)
                }
                b'b' => {
                    let state = self.pop()?;
                    let obj = self.pop()?;
                    let v = build(obj, state)?;
                    self.push(v)
                }
                other => return Err(format!("unsupported pickle opcode 0x{other:02x} at offset {at}")),
            }
        }
    }
}

/// Only NumPy's own constructors are understood; everything else is refused.
fn reduce(func: PyValue, args: Vec<PyValue>) -> Result<PyValue, String> {
    let PyValue::Global(name) = &func else { return Err("REDUCE of a non-global".into()) };
    match name.as_str() {
        "numpy.core.multiarray._reconstruct" | "numpy._core.multiarray._reconstruct" => {
            Ok(PyValue::Array { shape: Vec::new(), data: Vec::new(), objects: Vec::new() })
        }
        "numpy.dtype" => match args.first() {
            Some(PyValue::Str(code)) => Ok(PyValue::Dtype(code.clone())),
            _ => Err("numpy.dtype without a type code".into()),
        },
        other => Err(format!("the pickle calls {other}, which a NumPy embedding file never does")),
    }
}

fn build(obj: PyValue, state: PyValue) -> Result<PyValue, String> {
    match obj {
        // dtype state: (version, byte order, ...): only the byte order matters.
        PyValue::Dtype(code) => {
            let order = match &state {
                PyValue::Tuple(t) => t.get(1).and_then(PyValue::as_str).unwrap_or("<").to_string(),
                _ => "<".into(),
            };
            Ok(PyValue::Dtype(format!("{}{code}", if order == "|" { "<" } else { &order })))
        }
        PyValue::Array { .. } => {
            let PyValue::Tuple(t) = state else { return Err("ndarray state is not a tuple".into()) };
            let [_, PyValue::Tuple(shape), PyValue::Dtype(dtype), _, raw] = t.as_slice() else {
                return Err("unexpected ndarray state".into());
            };
            let shape: Vec<usize> = shape.iter().map(|d| if let PyValue::Int(n) = d { *n as usize } else { 0 }).collect();
            match raw {
                PyValue::List(objects) => Ok(PyValue::Array { shape, data: Vec::new(), objects: objects.clone() }),
                PyValue::Bytes(bytes) => {
                    let count = shape.iter().product();
                    Ok(PyValue::Array { shape, data: decode_numbers(dtype, bytes, count)?, objects: Vec::new() })
                }
                _ => Err("ndarray data is neither bytes nor a list".into()),
            }
        }
        _ => Err("BUILD of an unsupported object".into()),
    }
}

/// Writes `{id: vector}` as `np.save` would write the dict: a 0-d object
/// array holding a pickle (protocol 3) of float32 arrays.
pub fn write_vector_dict<'a>(entries: impl IntoIterator<Item = (&'a str, &'a [f32])>) -> Vec<u8> {
    let mut p = vec![0x80, 3];
    let global = |p: &mut Vec<u8>, module: &str, name: &str| {
        p.push(b'c');
        p.extend_from_slice(format!("{module}\n{name}\n").as_bytes());
    };
    let unicode = |p: &mut Vec<u8>, s: &str| {
        p.push(b'X');
        p.extend_from_slice(&(s.len() as u32).to_le_bytes());
        p.extend_from_slice(s.as_bytes());
    };
    let bytes = |p: &mut Vec<u8>, b: &[u8]| {
        p.push(b'B');
        p.extend_from_slice(&(b.len() as u32).to_le_bytes());
        p.extend_from_slice(b);
    };
    let int = |p: &mut Vec<u8>, v: i32| {
        p.push(b'J');
        p.extend_from_slice(&v.to_le_bytes());
    };
    // _reconstruct(ndarray, (0,), b'b') then BUILD with the array's state.
    let array_head = |p: &mut Vec<u8>| {
        global(p, "numpy.core.multiarray", "_reconstruct");
        global(p, "numpy", "ndarray");
        int(p, 0);
        p.push(0x85);
        bytes(p, b"b");
        p.push(0x87);
        p.push(b'R');
    };
    let dtype = |p: &mut Vec<u8>, code: &str, order: &str, itemsize_flags: (i32, i32, i32)| {
        global(p, "numpy", "dtype");
        unicode(p, code);
        p.extend_from_slice(&[0x89, 0x88, 0x87, b'R', b'(']);
        int(p, 3);
        unicode(p, order);
        p.extend_from_slice(b"NNN");
        int(p, itemsize_flags.0);
        int(p, itemsize_flags.1);
        int(p, itemsize_flags.2);
        p.extend_from_slice(b"tb");
    };
    array_head(&mut p);
    p.push(b'(');
    int(&mut p, 1);
    p.push(b')');
    dtype(&mut p, "O8", "|", (-1, -1, 63));
    p.push(0x89);
    p.push(b']');
    p.push(b'}');
    p.push(b'(');
    for (id, vector) in entries {
        unicode(&mut p, id);
        array_head(&mut p);
        p.push(b'(');
        int(&mut p, 1);
        int(&mut p, vector.len() as i32);
        p.push(0x85);
        dtype(&mut p, "f4", "<", (-1, -1, 0));
        p.push(0x89);
        bytes(&mut p, &vector.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>());
        p.extend_from_slice(b"tb");
    }
    p.extend_from_slice(b"uatb.");
    npy_file("|O", "()", &p)
}

/// Writes a plain `[rows, dim]` float32 array.
pub fn write_matrix(rows: &[Vec<f32>]) -> Vec<u8> {
    let dim = rows.first().map_or(0, Vec::len);
    let body: Vec<u8> = rows.iter().flatten().flat_map(|v| v.to_le_bytes()).collect();
    npy_file("<f4", &format!("({}, {dim})", rows.len()), &body)
}

fn npy_file(descr: &str, shape: &str, body: &[u8]) -> Vec<u8> {
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // The header is padded so the data starts on a 64-byte boundary.
    let total = MAGIC.len() + 4 + header.len() + 1;
    header.push_str(&" ".repeat((64 - total % 64) % 64));
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// `np.save(f, {'p1': float32[1, -2.5, .25], 'p2': float32[.5, 0, 3]}, allow_pickle=True)` by NumPy 2.4.6.
    const NUMPY_DICT: &str = "934e554d5059010076007b276465736372273a20277c4f272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028292c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a8004950c010000000000008c166e756d70792e5f636f72652e6d756c74696172726179948c0c5f7265636f6e7374727563749493948c056e756d7079948c076e6461727261799493944b0085944301629487945294284b012968038c0564747970659493948c024f3894898887945294284b038c017c944e4e4e4affffffff4affffffff4b3f749462895d947d94288c02703194680268054b008594680787945294284b014b038594680b8c02663494898887945294284b038c013c944e4e4e4affffffff4affffffff4b0074946289430c0000803f000020c00000803e947494628c02703294680268054b008594680787945294284b014b038594681a89430c0000003f00000000000040409474946275617494622e";
    /// `np.save(f, {'话题A': {'k1': float32[1, 2]}})`: the nested topic form.
    const NUMPY_NESTED: &str = "934e554d5059010076007b276465736372273a20277c4f272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028292c207d2020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a800495e5000000000000008c166e756d70792e5f636f72652e6d756c74696172726179948c0c5f7265636f6e7374727563749493948c056e756d7079948c076e6461727261799493944b0085944301629487945294284b012968038c0564747970659493948c024f3894898887945294284b038c017c944e4e4e4affffffff4affffffff4b3f749462895d947d948c07e8af9de9a29841947d948c026b3194680268054b008594680787945294284b014b028594680b8c02663494898887945294284b038c013c944e4e4e4affffffff4affffffff4b007494628943080000803f00000040947494627373617494622e";
    /// `np.save(f, float32[[1,2,3],[4,5,6]])`.
    const NUMPY_MATRIX: &str = "934e554d5059010076007b276465736372273a20273c6634272c2027666f727472616e5f6f72646572273a2046616c73652c20277368617065273a2028322c2033292c207d202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020202020200a0000803f0000004000004040000080400000a0400000c040";

    fn dict(npy: Npy) -> Vec<(String, PyValue)> {
        let Npy::Object(PyValue::Dict(d)) = npy else { panic!("not a dict: {npy:?}") };
        d.into_iter().map(|(k, v)| (k.as_str().unwrap().to_string(), v)).collect()
    }

    #[test]
    fn numpys_pickled_dicts_are_read() {
        let d = dict(parse(&unhex(NUMPY_DICT)).unwrap());
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].0, "p1");
        assert_eq!(d[0].1.as_vector().unwrap(), vec![1.0, -2.5, 0.25]);
        assert_eq!(d[1].1.as_vector().unwrap(), vec![0.5, 0.0, 3.0]);

        let nested = dict(parse(&unhex(NUMPY_NESTED)).unwrap());
        assert_eq!(nested[0].0, "话题A");
        let PyValue::Dict(inner) = &nested[0].1 else { panic!() };
        assert_eq!(inner[0].1.as_vector().unwrap(), vec![1.0, 2.0]);
    }

    #[test]
    fn numpys_matrices_are_read() {
        let Npy::Matrix { shape, data } = parse(&unhex(NUMPY_MATRIX)).unwrap() else { panic!() };
        assert_eq!((shape, data), (vec![2, 3], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
    }

    #[test]
    fn written_files_read_back() {
        let a = [1.0f32, 2.0, -3.5];
        let b = [0.0f32, 0.5, 9.0];
        let bytes = write_vector_dict([("x", &a[..]), ("话题", &b[..])]);
        let d = dict(parse(&bytes).unwrap());
        assert_eq!((d[0].0.as_str(), d[0].1.as_vector().unwrap()), ("x", a.to_vec()));
        assert_eq!((d[1].0.as_str(), d[1].1.as_vector().unwrap()), ("话题", b.to_vec()));
        let m = write_matrix(&[a.to_vec(), b.to_vec()]);
        assert_eq!(parse(&m).unwrap(), Npy::Matrix { shape: vec![2, 3], data: [a, b].concat() });
        assert_eq!((m.len() - 12) % 4, 0);
    }

    #[test]
    fn hostile_or_broken_pickles_are_refused() {
        let mut evil = unhex(NUMPY_DICT);
        let at = evil.windows(5).position(|w| w == b"numpy").unwrap();
        evil[at..at + 5].copy_from_slice(b"posix");
        assert!(parse(&evil).unwrap_err().contains("which a NumPy embedding file never does"));
        let full = unhex(NUMPY_DICT);
        assert!(parse(&full[..full.len() - 20]).unwrap_err().contains("truncated"));
        assert_eq!(parse(b"hello").unwrap_err(), "not a .npy file (bad magic)");
    }
}
