//! HTTP transfer and content codings, decoded with a bound on the output.
//!
//! Decoding is for two things: a transfer coding is removed before the
//! guest sees the answer (transfer codings are hop-by-hop: the guest gets
//! the payload), and every coding is decoded so that the decoded bytes can
//! be searched for the credential ([`super::inspect`]). Every decoder
//! stops at a byte limit, so a decompression bomb costs at most the limit.

use std::io::Read;

/// A coding the host can decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// `gzip`, `x-gzip` (one or more members).
    Gzip,
    /// `deflate`: zlib as the RFC says, or raw deflate as some servers send.
    Deflate,
    /// `br`.
    Brotli,
    /// `zstd`.
    Zstd,
}

/// The largest zstd window the decoder accepts (2^23 = 8 MiB): a frame
/// that asks for more would make the host allocate it.
pub const ZSTD_MAX_WINDOW_LOG: u32 = 23;

/// Why a body could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The decoded bytes would pass the limit.
    TooLarge,
    /// The bytes are not valid in the coding (or the coding is not one the
    /// host knows).
    Invalid,
}

impl Coding {
    /// The coding named `token` (case-insensitive), `Ok(None)` for
    /// `identity` (and `chunked`, which the HTTP client has removed), or
    /// `Err(())` for a coding the host cannot decode (`compress`, or any
    /// other name).
    #[allow(clippy::result_unit_err)]
    pub fn parse(token: &str) -> Result<Option<Coding>, ()> {
        let t = token.trim();
        if t.eq_ignore_ascii_case("gzip") || t.eq_ignore_ascii_case("x-gzip") {
            Ok(Some(Coding::Gzip))
        } else if t.eq_ignore_ascii_case("deflate") {
            Ok(Some(Coding::Deflate))
        } else if t.eq_ignore_ascii_case("br") {
            Ok(Some(Coding::Brotli))
        } else if t.eq_ignore_ascii_case("zstd") {
            Ok(Some(Coding::Zstd))
        } else if t.eq_ignore_ascii_case("identity") || t.eq_ignore_ascii_case("chunked") {
            Ok(None)
        } else {
            Err(())
        }
    }

    /// Decodes all of `input`, failing if it is not valid in this coding
    /// or if the output would pass `limit` bytes.
    pub fn decode(self, input: &[u8], limit: usize) -> Result<Vec<u8>, DecodeError> {
        match self {
            Coding::Deflate => {
                // zlib as RFC 9110 says; raw deflate as some servers send it.
                match read_all(flate2::read::ZlibDecoder::new(input), limit) {
                    Err(DecodeError::Invalid) => {
                        read_all(flate2::read::DeflateDecoder::new(input), limit)
                    }
                    other => other,
                }
            }
            Coding::Gzip => read_all(flate2::read::MultiGzDecoder::new(input), limit),
            Coding::Brotli => read_all(brotli_decompressor::Decompressor::new(input, 4096), limit),
            Coding::Zstd => {
                let mut d =
                    zstd::stream::read::Decoder::new(input).map_err(|_| DecodeError::Invalid)?;
                d.window_log_max(ZSTD_MAX_WINDOW_LOG)
                    .map_err(|_| DecodeError::Invalid)?;
                read_all(d, limit)
            }
        }
    }
}

/// Reads `r` to its end, or fails: `TooLarge` past `limit` bytes,
/// `Invalid` on a decoding error.
fn read_all(r: impl Read, limit: usize) -> Result<Vec<u8>, DecodeError> {
    let (out, end) = read_bounded(r, limit);
    match end {
        End::Complete => Ok(out),
        End::Limit => Err(DecodeError::TooLarge),
        End::Error => Err(DecodeError::Invalid),
    }
}

/// How a bounded read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The stream ended cleanly.
    Complete,
    /// `limit` bytes were read and more were coming.
    Limit,
    /// The decoder failed; what came before the failure was kept.
    Error,
}

/// Reads `r` until it ends, fails, or yields more than `limit` bytes, and
/// keeps what it read (at most `limit` bytes): for a stream found inside
/// an answer, whose end is unknown, the part a guest could decode too.
pub fn read_bounded(mut r: impl Read, limit: usize) -> (Vec<u8>, End) {
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return (out, End::Complete),
            Ok(n) => {
                if out.len() + n > limit {
                    let keep = limit - out.len();
                    out.extend_from_slice(&buf[..keep]);
                    return (out, End::Limit);
                }
                out.extend_from_slice(&buf[..n]);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return (out, End::Error),
        }
    }
}

/// A stream found inside an answer by its magic bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Embedded {
    /// `1f 8b 08`.
    Gzip,
    /// A zlib header: `CMF` with method 8 and any window size (`08`, `18`,
    /// … `78`), then an `FLG` whose check bits make the pair a multiple of
    /// 31, at every compression level, without a preset dictionary: every
    /// header `zlib.decompress` reads.
    Zlib,
    /// `28 b5 2f fd`.
    Zstd,
}

/// The zlib headers [`Embedded::Zlib`] stands for: 8 window sizes × 4
/// levels.
const ZLIB_HEADERS: [[u8; 2]; 32] = zlib_headers();

const fn zlib_headers() -> [[u8; 2]; 32] {
    let mut out = [[0u8; 2]; 32];
    let mut i = 0;
    while i < 32 {
        let cmf = (((i / 4) as u8) << 4) | 8;
        let level = (i % 4) as u8;
        let base = (cmf as u16) * 256 + ((level as u16) << 6);
        let check = (31 - base % 31) % 31;
        out[i] = [cmf, (level << 6) | check as u8];
        i += 1;
    }
    out
}

/// The magic byte strings, in the order of [`Embedded::from_pattern`]:
/// gzip, the 32 zlib headers, zstd.
pub fn magics() -> Vec<&'static [u8]> {
    let mut m: Vec<&'static [u8]> = vec![b"\x1f\x8b\x08"];
    m.extend(ZLIB_HEADERS.iter().map(|h| h.as_slice()));
    m.push(b"\x28\xb5\x2f\xfd");
    m
}

/// What decoding a stream found inside an answer gave.
#[derive(Debug)]
pub struct Prefix {
    /// The bytes decoded, at most the limit.
    pub out: Vec<u8>,
    /// How the decoding ended.
    pub end: End,
    /// How many input bytes the decoder read: the work it cost.
    pub read: usize,
}

impl Embedded {
    /// The kind of stream a match of `magics()[i]` starts.
    pub fn from_pattern(i: usize) -> Embedded {
        match i {
            0 => Embedded::Gzip,
            1..=32 => Embedded::Zlib,
            _ => Embedded::Zstd,
        }
    }

    /// Decodes the stream at the start of `input` as far as it goes (at most
    /// `limit` bytes): a guest could decode that much too.
    pub fn decode_prefix(self, input: &[u8], limit: usize) -> Prefix {
        let mut rest = input;
        let (out, end) = match self {
            Embedded::Gzip => read_bounded(flate2::bufread::MultiGzDecoder::new(&mut rest), limit),
            Embedded::Zlib => read_bounded(flate2::bufread::ZlibDecoder::new(&mut rest), limit),
            Embedded::Zstd => match zstd::stream::read::Decoder::with_buffer(&mut rest) {
                Ok(mut d) => {
                    if d.window_log_max(ZSTD_MAX_WINDOW_LOG).is_err() {
                        (Vec::new(), End::Error)
                    } else {
                        read_bounded(d, limit)
                    }
                }
                Err(_) => (Vec::new(), End::Error),
            },
        };
        Prefix {
            out,
            end,
            read: input.len() - rest.len(),
        }
    }
}

/// Encoders for each coding, for tests and benchmarks that need an
/// upstream's compressed answers (the host itself only decodes).
pub mod encode {
    use std::io::Write;

    pub fn gzip(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        let _ = e.write_all(data);
        e.finish().unwrap_or_default()
    }

    pub fn zlib(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        let _ = e.write_all(data);
        e.finish().unwrap_or_default()
    }

    pub fn raw_deflate(data: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
        let _ = e.write_all(data);
        e.finish().unwrap_or_default()
    }

    pub fn zstd(data: &[u8]) -> Vec<u8> {
        zstd::stream::encode_all(data, 3).unwrap_or_default()
    }

    /// A brotli stream of uncompressed meta-blocks (RFC 7932 §9.2):
    /// WBITS=16 (one 0 bit), then per block ISLAST=0, MNIBBLES=4,
    /// MLEN-1 (16 bits), ISUNCOMPRESSED=1, the bytes byte-aligned; then
    /// ISLAST=1, ISLASTEMPTY=1. Valid brotli that any decoder reads.
    pub fn brotli(data: &[u8]) -> Vec<u8> {
        let mut bits = BitWriter::default();
        bits.put(0, 1);
        for chunk in data.chunks(65536) {
            bits.put(0, 1);
            bits.put(0, 2);
            bits.put((chunk.len() - 1) as u64, 16);
            bits.put(1, 1);
            bits.align();
            bits.bytes.extend_from_slice(chunk);
        }
        bits.put(1, 1);
        bits.put(1, 1);
        bits.align();
        bits.bytes
    }

    #[derive(Default)]
    struct BitWriter {
        bytes: Vec<u8>,
        acc: u64,
        n: u32,
    }

    impl BitWriter {
        fn put(&mut self, v: u64, count: u32) {
            self.acc |= v << self.n;
            self.n += count;
            while self.n >= 8 {
                self.bytes.push(self.acc as u8);
                self.acc >>= 8;
                self.n -= 8;
            }
        }
        fn align(&mut self) {
            if self.n > 0 {
                self.bytes.push(self.acc as u8);
                self.acc = 0;
                self.n = 0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::encode::{brotli, gzip, raw_deflate, zlib, zstd};
    use super::*;

    #[test]
    fn every_coding_round_trips() {
        let data = b"hello, reflected world ".repeat(100);
        assert_eq!(Coding::Gzip.decode(&gzip(&data), 1 << 20), Ok(data.clone()));
        assert_eq!(
            Coding::Deflate.decode(&zlib(&data), 1 << 20),
            Ok(data.clone())
        );
        assert_eq!(
            Coding::Deflate.decode(&raw_deflate(&data), 1 << 20),
            Ok(data.clone())
        );
        assert_eq!(Coding::Zstd.decode(&zstd(&data), 1 << 20), Ok(data.clone()));
        assert_eq!(
            Coding::Brotli.decode(&brotli(&data), 1 << 20),
            Ok(data.clone())
        );
    }

    #[test]
    fn a_bomb_stops_at_the_limit() {
        let zeros = vec![0u8; 8 << 20];
        for enc in [gzip(&zeros), zstd(&zeros)] {
            assert!(enc.len() < 64 << 10);
            let coding = if enc[0] == 0x1f {
                Coding::Gzip
            } else {
                Coding::Zstd
            };
            assert_eq!(coding.decode(&enc, 1 << 20), Err(DecodeError::TooLarge));
        }
    }

    #[test]
    fn names_and_garbage() {
        assert_eq!(Coding::parse(" GZip "), Ok(Some(Coding::Gzip)));
        assert_eq!(Coding::parse("identity"), Ok(None));
        assert_eq!(Coding::parse("compress"), Err(()));
        assert_eq!(
            Coding::Gzip.decode(b"not gzip", 100),
            Err(DecodeError::Invalid)
        );
        let g = gzip(b"a fairly long text that is cut in the middle");
        let p = Embedded::Gzip.decode_prefix(&g[..g.len() - 6], 100);
        assert_eq!(p.end, End::Error);
        assert!(b"a fairly long text".starts_with(&p.out[..p.out.len().min(18)]));
        assert_eq!(p.read, g.len() - 6);
    }

    #[test]
    fn every_zlib_header_is_a_magic_and_each_is_valid() {
        let m = magics();
        assert_eq!(m.len(), 34);
        for h in &ZLIB_HEADERS {
            assert_eq!((u16::from(h[0]) * 256 + u16::from(h[1])) % 31, 0, "{h:?}");
            assert_eq!(h[0] & 0x0f, 8);
            assert_eq!(h[1] & 0x20, 0, "no preset dictionary");
        }
        // Every header, with a deflate stream and its Adler-32 behind it
        // (what zlib writes with a small window, `wbits=9`, starts 0x18):
        // each is found and decoded.
        let data = b"small window, any level";
        for h in &ZLIB_HEADERS {
            let mut z = h.to_vec();
            z.extend_from_slice(&encode::raw_deflate(data));
            z.extend_from_slice(&adler32(data).to_be_bytes());
            assert!(m.iter().any(|p| z.starts_with(p)), "{h:02x?}");
            let p = Embedded::Zlib.decode_prefix(&z, 100);
            assert_eq!(
                (p.out.as_slice(), p.end),
                (&data[..], End::Complete),
                "{h:02x?}"
            );
        }
    }

    fn adler32(data: &[u8]) -> u32 {
        let (mut a, mut b) = (1u32, 0u32);
        for &x in data {
            a = (a + u32::from(x)) % 65521;
            b = (b + a) % 65521;
        }
        (b << 16) | a
    }
}
