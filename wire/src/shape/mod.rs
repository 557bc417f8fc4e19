//! A pre-decode check of a message body against its wire layout (the generated tables in
//! `table.rs`, built from the types in `layout.rs`).
//!
//! Why: kafka-protocol reads an array length off the wire and calls `Vec::with_capacity(n)` before
//! reading any element. A corrupt length (say 0x7fffffff elements of a 72-byte struct) makes the
//! allocator fail, and Rust aborts the process on a failed allocation: no panic, nothing for
//! `catch_unwind` to catch. So before handing a body to kafka-protocol we walk it with the same
//! layout and refuse any array that claims more elements than the bytes that follow could hold,
//! or any body that does not parse exactly. After this check, every allocation kafka-protocol
//! makes is bounded by the size of the frame.
//!
//! The walker mirrors kafka-protocol's decoders exactly (including its 5-byte unsigned varints
//! and its handling of known tagged fields, which it decodes in place whatever their declared
//! size says; we additionally require the declared size to match, so both stay in step).

use kafka_protocol::messages::ApiKey;

mod layout;
mod table;

use layout::{Field, Shape, Ty};

/// Checks a request body of `api_key` at `version`. `Ok` means kafka-protocol's decoder will
/// only allocate in proportion to `body.len()`.
pub(crate) fn check_request(api_key: ApiKey, version: i16, body: &[u8]) -> Result<(), String> {
    let (shape, flexible_from) = table::request_shape(api_key)
        .ok_or_else(|| format!("no layout for {api_key:?} requests"))?;
    check(shape, version, version >= flexible_from, body)
}

/// Checks a response body of `api_key` at `version` (see [`check_request`]).
#[cfg(test)]
pub(crate) fn check_response(api_key: ApiKey, version: i16, body: &[u8]) -> Result<(), String> {
    let (shape, flexible_from) = table::response_shape(api_key)
        .ok_or_else(|| format!("no layout for {api_key:?} responses"))?;
    check(shape, version, version >= flexible_from, body)
}

/// Whether responses of `api_key` have a layout here.
pub(crate) fn has_response_layout(api_key: ApiKey) -> bool {
    table::response_shape(api_key).is_some()
}

/// How many bytes of `body` a well-formed response of `api_key` at `version` takes, leaving
/// any bytes after it unread.
pub(crate) fn response_length(api_key: ApiKey, version: i16, body: &[u8]) -> Result<usize, String> {
    let (shape, flexible_from) = table::response_shape(api_key)
        .ok_or_else(|| format!("no layout for {api_key:?} responses"))?;
    walk(shape, version, version >= flexible_from, body)
}

fn walk(shape: &Shape, version: i16, flexible: bool, body: &[u8]) -> Result<usize, String> {
    let mut walker = Walker { buf: body, pos: 0, version, flexible };
    walker.walk_struct(shape)?;
    Ok(walker.pos)
}

fn check(shape: &Shape, version: i16, flexible: bool, body: &[u8]) -> Result<(), String> {
    let length = walk(shape, version, flexible, body)?;
    if length != body.len() {
        return Err(format!(
            "{} trailing bytes after {} v{version}",
            body.len() - length,
            shape.name
        ));
    }
    Ok(())
}

struct Walker<'a> {
    buf: &'a [u8],
    pos: usize,
    version: i16,
    flexible: bool,
}

impl Walker<'_> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], String> {
        if n > self.remaining() {
            return Err(format!("{what}: needs {n} bytes, {} left", self.remaining()));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn i16(&mut self, what: &str) -> Result<i16, String> {
        let b = self.take(2, what)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self, what: &str) -> Result<i32, String> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// kafka-protocol's unsigned varint: at most 5 bytes, high bits past 32 dropped.
    fn uvarint(&mut self, what: &str) -> Result<u32, String> {
        let mut value: u32 = 0;
        for i in 0..5 {
            let b = self.take(1, what)?[0] as u32;
            value |= (b & 0x7f) << (i * 7);
            if b < 0x80 {
                break;
            }
        }
        Ok(value)
    }

    /// Length of a string/bytes/array: `None` for null.
    fn length(&mut self, classic_i16: bool, what: &str) -> Result<Option<usize>, String> {
        if self.flexible {
            let n = self.uvarint(what)?;
            return Ok(n.checked_sub(1).map(|n| n as usize));
        }
        let n = if classic_i16 { self.i16(what)? as i32 } else { self.i32(what)? };
        match n {
            -1 => Ok(None),
            n if n < 0 => Err(format!("{what}: negative length {n}")),
            n => Ok(Some(n as usize)),
        }
    }

    fn walk_ty(&mut self, ty: &Ty, what: &str) -> Result<(), String> {
        match ty {
            Ty::I8 | Ty::Bool => self.take(1, what).map(drop),
            Ty::I16 => self.take(2, what).map(drop),
            Ty::I32 => self.take(4, what).map(drop),
            Ty::I64 | Ty::F64 => self.take(8, what).map(drop),
            Ty::Uuid => self.take(16, what).map(drop),
            Ty::Str => match self.length(true, what)? {
                Some(n) => self.take(n, what).map(drop),
                None => Ok(()),
            },
            Ty::Bytes => match self.length(false, what)? {
                Some(n) => self.take(n, what).map(drop),
                None => Ok(()),
            },
            Ty::PrimArray(elem) => {
                let Some(n) = self.array_len(what)? else { return Ok(()) };
                (0..n).try_for_each(|_| self.walk_ty(elem, what))
            }
            Ty::Array(shape) => {
                let Some(n) = self.array_len(what)? else { return Ok(()) };
                (0..n).try_for_each(|_| self.walk_struct(shape))
            }
            Ty::Struct(shape) => self.walk_struct(shape),
            Ty::OptionStruct(shape) => {
                // kafka-protocol reads the struct only after a marker of exactly 1.
                if self.take(1, what)?[0] == 1 {
                    self.walk_struct(shape)
                } else {
                    Ok(())
                }
            }
        }
    }

    /// An array length, refused if the elements could not fit in the bytes left (every element
    /// of every layout we know takes at least one byte).
    fn array_len(&mut self, what: &str) -> Result<Option<usize>, String> {
        let n = self.length(false, what)?;
        if let Some(n) = n {
            if n > self.remaining() {
                return Err(format!(
                    "{what}: array of {n} elements with {} bytes left",
                    self.remaining()
                ));
            }
        }
        Ok(n)
    }

    fn walk_struct(&mut self, shape: &Shape) -> Result<(), String> {
        let v = self.version;
        for f in shape.fields.iter().filter(|f| f.tag.is_none() && f.min <= v && v <= f.max) {
            self.walk_ty(&f.ty, f.name)?;
        }
        if !self.flexible {
            return Ok(());
        }
        let count = self.uvarint("tagged field count")?;
        for _ in 0..count {
            let tag = self.uvarint("tag")?;
            let size = self.uvarint("tagged field size")? as usize;
            match shape.fields.iter().find(|f| f.tag == Some(tag)) {
                Some(f) if f.min <= v && v <= f.max => {
                    let start = self.pos;
                    self.walk_ty(&f.ty, f.name)?;
                    if self.pos - start != size {
                        return Err(format!(
                            "tagged field {} of {} declares {size} bytes but holds {}",
                            f.name,
                            shape.name,
                            self.pos - start
                        ));
                    }
                }
                Some(f) => return Err(format!("tagged field {} is not valid in v{v}", f.name)),
                None => {
                    self.take(size, "unknown tagged field")?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_array_length_is_refused_before_decoding() {
        // Metadata v1: topics array claims i32::MAX elements.
        let body = i32::MAX.to_be_bytes();
        let err = check_request(ApiKey::Metadata, 1, &body).unwrap_err();
        assert!(err.contains("array of 2147483647 elements"), "{err}");
    }

    #[test]
    fn null_array_and_exact_body_pass() {
        // Metadata v1: topics = null (-1).
        assert!(check_request(ApiKey::Metadata, 1, &(-1i32).to_be_bytes()).is_ok());
        let mut with_trailing = (-1i32).to_be_bytes().to_vec();
        with_trailing.push(0);
        assert!(check_request(ApiKey::Metadata, 1, &with_trailing)
            .unwrap_err()
            .contains("trailing"));
    }

    #[test]
    fn known_tagged_field_must_match_its_declared_size() {
        // ApiVersions v3 response: error 0, api_keys empty (compact 1), throttle 0, one tagged
        // field: tag 3 (zk_migration_ready, a bool) declared with size 2.
        let body = [0, 0, 1, 0, 0, 0, 0, 1, 3, 2, 1, 0];
        let err = check_response(ApiKey::ApiVersions, 3, &body).unwrap_err();
        assert!(err.contains("declares 2 bytes"), "{err}");
        let good = [0, 0, 1, 0, 0, 0, 0, 1, 3, 1, 1];
        assert!(check_response(ApiKey::ApiVersions, 3, &good).is_ok());
    }
}
