//! Here-documents: the delimiter word, and reading the bodies after the
//! newline that ends the command that asked for them.

use super::ast::{Part, Word};
use super::{PResult, Parser};

/// The delimiter's text (quotes removed) and whether any of it was quoted
/// (then the body is taken literally).
pub(crate) fn delimiter(w: &Word) -> (Vec<u8>, bool) {
    let mut text = Vec::new();
    let mut quoted = false;
    for p in w {
        match p {
            Part::Lit(b) => text.extend_from_slice(b),
            Part::Quoted(b) => {
                quoted = true;
                text.extend_from_slice(b);
            }
            Part::Double(parts) => {
                quoted = true;
                for q in parts {
                    if let Part::Quoted(b) | Part::Lit(b) = q {
                        text.extend_from_slice(b);
                    }
                }
            }
            Part::Tilde(name) => {
                text.push(b'~');
                text.extend_from_slice(name);
            }
            Part::Param(p) => {
                text.push(b'$');
                text.extend_from_slice(&p.name);
            }
            _ => {}
        }
    }
    (text, quoted)
}

impl Parser<'_> {
    /// Reads the bodies of the pending here-documents, in order, from the
    /// position (just after a newline).
    pub(super) fn read_heredocs(&mut self) -> PResult<()> {
        let pending = std::mem::take(&mut self.pending);
        for doc in pending {
            let mut body = Vec::new();
            loop {
                if self.eof() {
                    // bash warns and takes what it read; so do we.
                    break;
                }
                let start = self.pos;
                let end = self.src[start..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(self.src.len(), |n| start + n);
                self.pos = (end + 1).min(self.src.len());
                let mut line = &self.src[start..end];
                if doc.strip_tabs {
                    let tabs = line.iter().take_while(|&&c| c == b'\t').count();
                    line = &line[tabs..];
                }
                let trimmed = line.strip_suffix(b"\r").unwrap_or(line);
                if trimmed == doc.delim.as_slice() {
                    break;
                }
                body.extend_from_slice(line);
                body.push(b'\n');
            }
            let word = if doc.quoted {
                vec![Part::Quoted(body)]
            } else {
                let mut sub = Parser::new(&body, self.depth);
                sub.heredoc_parts()?
            };
            // The cell is only ever set here, once per document.
            let _ = doc.doc.body.set(word);
        }
        Ok(())
    }
}
