//! Standard streams inside the shell: output sinks (the real stdout and
//! stderr, a bounded pipe or substitution buffer, a file, `/dev/null`) and
//! input buffers shared by the commands that read them.

use crate::limits::{MAX_BUFFERS, MAX_STDIN};
use std::cell::{Cell, RefCell};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::rc::Rc;

thread_local! {
    /// Bytes held by every live buffer (pipes, substitutions, the inputs
    /// made of them), at most [`MAX_BUFFERS`].
    static LIVE: Cell<usize> = const { Cell::new(0) };
}

/// Charges up to `want` bytes to the shared buffer budget; returns how
/// many were granted.
fn charge(want: usize) -> usize {
    LIVE.with(|l| {
        let n = want.min(MAX_BUFFERS.saturating_sub(l.get()));
        l.set(l.get() + n);
        n
    })
}

fn release(n: usize) {
    LIVE.with(|l| l.set(l.get().saturating_sub(n)));
}

/// Bytes all live buffers hold together.
pub fn buffered() -> usize {
    LIVE.with(Cell::get)
}

/// Returned by a write when the reader is gone or the buffer is full: the
/// writer should stop, as on SIGPIPE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Broken;

/// Where output goes.
pub enum Sink {
    /// The guest's real stdout or stderr. Write errors are ignored: the
    /// host may cut output at a cap and the shell must keep running.
    Real(Rc<RefCell<dyn Write>>),
    /// A pipe or command-substitution buffer with a cap. Its bytes are
    /// charged to the budget all buffers share ([`MAX_BUFFERS`]).
    Buffer {
        /// What was written.
        data: Vec<u8>,
        /// Most bytes it takes.
        cap: usize,
        /// The cap (or the shared budget) was reached.
        full: bool,
    },
    /// A file opened by a redirection.
    File {
        /// The open file.
        w: BufWriter<File>,
        /// The first write error, reported when the file is closed.
        err: Option<std::io::Error>,
    },
    /// `/dev/null`.
    Null,
}

/// A shared output.
pub type Out = Rc<RefCell<Sink>>;

impl Sink {
    /// A bounded buffer.
    pub fn buffer(cap: usize) -> Out {
        Rc::new(RefCell::new(Sink::Buffer {
            data: Vec::new(),
            cap,
            full: false,
        }))
    }

    /// `/dev/null`.
    pub fn null() -> Out {
        Rc::new(RefCell::new(Sink::Null))
    }

    /// Writes `b`; `Err(Broken)` tells the writer to stop.
    pub fn write(&mut self, b: &[u8]) -> Result<(), Broken> {
        match self {
            Sink::Real(w) => {
                if let Ok(mut w) = w.try_borrow_mut() {
                    let _ = w.write_all(b);
                }
                Ok(())
            }
            Sink::Buffer { data, cap, full } => {
                if *full {
                    return Err(Broken);
                }
                let room = cap.saturating_sub(data.len()).min(b.len());
                let granted = charge(room);
                data.extend_from_slice(&b[..granted]);
                if granted < b.len() {
                    *full = true;
                    return Err(Broken);
                }
                Ok(())
            }
            Sink::File { w, err } => {
                if err.is_some() {
                    return Err(Broken);
                }
                if let Err(e) = w.write_all(b) {
                    *err = Some(e);
                    return Err(Broken);
                }
                Ok(())
            }
            Sink::Null => Ok(()),
        }
    }

    /// Flushes a real stream or a file; returns a file's write error.
    pub fn flush(&mut self) -> Option<std::io::Error> {
        match self {
            Sink::Real(w) => {
                if let Ok(mut w) = w.try_borrow_mut() {
                    let _ = w.flush();
                }
                None
            }
            Sink::File { w, err } => {
                if let Err(e) = w.flush()
                    && err.is_none()
                {
                    *err = Some(e);
                }
                err.take()
            }
            _ => None,
        }
    }

    /// Takes a buffer's contents (empty for other sinks, no longer charged
    /// to the budget) and whether the cap was reached.
    pub fn take(&mut self) -> (Vec<u8>, bool) {
        match self {
            Sink::Buffer { data, full, .. } => {
                release(data.len());
                (std::mem::take(data), *full)
            }
            _ => (Vec::new(), false),
        }
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        if let Sink::Buffer { data, .. } = self {
            release(data.len());
        }
    }
}

/// Writes to a shared output.
pub fn put(out: &Out, b: &[u8]) -> Result<(), Broken> {
    match out.try_borrow_mut() {
        Ok(mut s) => s.write(b),
        Err(_) => Ok(()),
    }
}

/// Input available to commands: bytes and a read position, shared so that
/// `read` in a loop and the commands in its body consume the same stream.
pub struct Input {
    data: Vec<u8>,
    pos: usize,
    lazy: Option<Box<dyn Read>>,
    /// Bytes charged to the shared buffer budget (a pipe's contents).
    charged: usize,
}

impl Drop for Input {
    fn drop(&mut self) {
        release(self.charged);
    }
}

/// A shared input.
pub type In = Rc<RefCell<Input>>;

impl Input {
    /// Input holding `data`.
    pub fn bytes(data: Vec<u8>) -> In {
        Rc::new(RefCell::new(Input {
            data,
            pos: 0,
            lazy: None,
            charged: 0,
        }))
    }

    /// Input holding a pipe's contents (just taken from its buffer): they
    /// stay charged to the shared budget while the input lives.
    pub fn piped(data: Vec<u8>) -> In {
        let charged = data.len();
        LIVE.with(|l| l.set(l.get() + charged));
        Rc::new(RefCell::new(Input {
            data,
            pos: 0,
            lazy: None,
            charged,
        }))
    }

    /// No input.
    pub fn empty() -> In {
        Self::bytes(Vec::new())
    }

    /// Input read from `r` (up to [`MAX_STDIN`] bytes) when first needed.
    pub fn lazy(r: Box<dyn Read>) -> In {
        Rc::new(RefCell::new(Input {
            data: Vec::new(),
            pos: 0,
            lazy: Some(r),
            charged: 0,
        }))
    }

    fn fill(&mut self) {
        if let Some(r) = self.lazy.take() {
            let mut buf = Vec::new();
            let _ = r.take(MAX_STDIN as u64).read_to_end(&mut buf);
            self.data = buf;
            self.pos = 0;
        }
    }

    /// Everything not yet read.
    pub fn take_all(&mut self) -> Vec<u8> {
        self.fill();
        let rest = self.data[self.pos.min(self.data.len())..].to_vec();
        self.pos = self.data.len();
        rest
    }

    /// How many bytes are not yet read.
    pub fn remaining(&mut self) -> usize {
        self.fill();
        self.data.len().saturating_sub(self.pos)
    }

    /// Everything not yet read, left unread.
    pub fn peek_all(&mut self) -> Vec<u8> {
        self.fill();
        self.data[self.pos.min(self.data.len())..].to_vec()
    }

    /// The next line up to and including `delim`, or the rest; `None` at the
    /// end.
    pub fn read_until(&mut self, delim: u8) -> Option<Vec<u8>> {
        self.fill();
        if self.pos >= self.data.len() {
            return None;
        }
        let rest = &self.data[self.pos..];
        let n = rest
            .iter()
            .position(|&c| c == delim)
            .map_or(rest.len(), |i| i + 1);
        let line = rest[..n].to_vec();
        self.pos += n;
        Some(line)
    }

    /// Up to `n` bytes.
    pub fn read_n(&mut self, n: usize) -> Vec<u8> {
        self.fill();
        let end = self.pos.saturating_add(n).min(self.data.len());
        let out = self.data[self.pos.min(end)..end].to_vec();
        self.pos = end;
        out
    }
}

/// One open descriptor.
#[derive(Clone)]
pub enum Fd {
    /// Readable.
    In(In),
    /// Writable.
    Out(Out),
}

/// The descriptors 0–9 of a command.
#[derive(Clone)]
pub struct Io {
    /// Index = descriptor number.
    pub fds: Vec<Option<Fd>>,
}

impl Io {
    /// Descriptors 0, 1 and 2.
    pub fn new(stdin: In, stdout: Out, stderr: Out) -> Self {
        let mut fds = vec![None; 10];
        fds[0] = Some(Fd::In(stdin));
        fds[1] = Some(Fd::Out(stdout));
        fds[2] = Some(Fd::Out(stderr));
        Io { fds }
    }

    /// Standard input (empty if descriptor 0 is closed or not readable).
    pub fn stdin(&self) -> In {
        match self.fds.first() {
            Some(Some(Fd::In(i))) => i.clone(),
            _ => Input::empty(),
        }
    }

    /// The output on descriptor `n` (`/dev/null` if closed).
    pub fn out(&self, n: usize) -> Out {
        match self.fds.get(n) {
            Some(Some(Fd::Out(o))) => o.clone(),
            _ => Sink::null(),
        }
    }

    /// Standard output.
    pub fn stdout(&self) -> Out {
        self.out(1)
    }

    /// Standard error.
    pub fn stderr(&self) -> Out {
        self.out(2)
    }
}
