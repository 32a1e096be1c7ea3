//! The syntax tree the parser builds and the evaluator walks. Every text is
//! bytes: a word's parts keep whether they were quoted, which expansion
//! needs for field splitting and globbing.

use std::cell::OnceCell;
use std::rc::Rc;

/// A list of and-or lists, separated by `;`, `&` or newlines.
pub type List = Vec<Item>;

/// One and-or list with how it was terminated.
#[derive(Debug, Clone)]
pub struct Item {
    /// The and-or list.
    pub and_or: AndOr,
    /// Ended by `&` (run in the foreground all the same).
    pub background: bool,
}

/// `p1 && p2 || p3 …`.
#[derive(Debug, Clone)]
pub struct AndOr {
    /// The first pipeline.
    pub first: Pipeline,
    /// Each following pipeline with the operator before it (`true` = `&&`).
    pub rest: Vec<(bool, Pipeline)>,
}

/// `[!] c1 | c2 | …`.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// Led by `!`.
    pub bang: bool,
    /// Led by `time`: report the elapsed time on stderr.
    pub timed: bool,
    /// The stages, at least one.
    pub cmds: Vec<Command>,
}

/// One command of a pipeline.
#[derive(Debug, Clone)]
pub enum Command {
    /// Assignments, words and redirections.
    Simple(Simple),
    /// A compound command with its redirections.
    Compound(Box<Compound>, Vec<Redir>),
    /// `name() body`.
    FuncDef(Vec<u8>, Rc<Command>),
}

/// A simple command.
#[derive(Debug, Clone, Default)]
pub struct Simple {
    /// `NAME=value` prefixes (and `NAME+=value`, `NAME=(…)`).
    pub assigns: Vec<Assign>,
    /// The command name and its arguments, unexpanded.
    pub words: Vec<Word>,
    /// Redirections, in order.
    pub redirs: Vec<Redir>,
    /// Array assignments written as arguments of a declaration command
    /// (`local -a a=(1 2)`): the word stands as `NAME`, the values are
    /// assigned after the builtin declared the name.
    pub decl_arrays: Vec<Assign>,
}

/// `NAME=value`, `NAME+=value`, `NAME[i]=value` or `NAME=(a b c)`.
#[derive(Debug, Clone)]
pub struct Assign {
    /// The variable name.
    pub name: Vec<u8>,
    /// `NAME[index]=…`: the unexpanded index.
    pub index: Option<Word>,
    /// `+=`.
    pub append: bool,
    /// The value.
    pub value: AssignValue,
}

/// The right-hand side of an assignment.
#[derive(Debug, Clone)]
pub enum AssignValue {
    /// A scalar word (not split, not globbed).
    Scalar(Word),
    /// `(w1 w2 …)`: an indexed array (split and globbed as arguments).
    Array(Vec<Word>),
}

/// The compound commands.
#[derive(Debug, Clone)]
pub enum Compound {
    /// `{ list; }`.
    Brace(List),
    /// `( list )`.
    Subshell(List),
    /// `if c; then b; elif c; then b; else b; fi`.
    If {
        /// Each condition with its body.
        arms: Vec<(List, List)>,
        /// The `else` body.
        otherwise: Option<List>,
    },
    /// `for NAME [in WORDS]; do body; done`.
    For {
        /// The loop variable.
        var: Vec<u8>,
        /// `None`: the positional parameters.
        words: Option<Vec<Word>>,
        /// The body.
        body: List,
    },
    /// `for ((init; cond; step)); do body; done`.
    ArithFor {
        /// The three expressions (unexpanded text).
        init: Word,
        /// Empty means true.
        cond: Word,
        /// Evaluated after each pass.
        step: Word,
        /// The body.
        body: List,
    },
    /// `while`/`until cond; do body; done`.
    While {
        /// The condition.
        cond: List,
        /// The body.
        body: List,
        /// `until` rather than `while`.
        until: bool,
    },
    /// `case WORD in pat|pat) list ;; … esac`.
    Case {
        /// The subject.
        word: Word,
        /// The arms.
        arms: Vec<CaseArm>,
    },
    /// `[[ expression ]]`.
    Cond(Cond),
    /// `(( expression ))`.
    Arith(Word),
}

/// One `case` arm.
#[derive(Debug, Clone)]
pub struct CaseArm {
    /// The patterns.
    pub patterns: Vec<Word>,
    /// The body.
    pub body: List,
    /// How it ends: `;;` (stop), `;&` (fall through) or `;;&` (test next).
    pub end: CaseEnd,
}

/// A `case` arm's terminator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseEnd {
    /// `;;`
    Break,
    /// `;&`
    FallThrough,
    /// `;;&`
    Continue,
}

/// A `[[ … ]]` expression.
#[derive(Debug, Clone)]
pub enum Cond {
    /// `! e`
    Not(Box<Cond>),
    /// `a && b && …` (flat: a long chain is not a deep tree)
    And(Vec<Cond>),
    /// `a || b || …`
    Or(Vec<Cond>),
    /// `-f word` and the other unary tests.
    Unary(Vec<u8>, Word),
    /// `a == b`, `a =~ b`, `a -eq b`, …
    Binary(Vec<u8>, Word, Word),
    /// A lone word: true when non-empty.
    Word(Word),
}

/// A word: parts concatenated, expanded at run time.
pub type Word = Vec<Part>;

/// A piece of a word.
#[derive(Debug, Clone)]
pub enum Part {
    /// Unquoted text (subject to globbing; never split).
    Lit(Vec<u8>),
    /// Quoted text: `'…'`, `\c`, `$'…'`, or literal text inside `"…"`.
    Quoted(Vec<u8>),
    /// `"…"`.
    Double(Vec<Part>),
    /// A leading `~` or `~name`.
    Tilde(Vec<u8>),
    /// `$name`, `${…}`.
    Param(Box<Param>),
    /// `$(…)` or `` `…` ``.
    Command(Rc<List>),
    /// `$((…))`.
    Arith(Word),
    /// `<(…)` (`false`) or `>(…)` (`true`): a file name standing for the
    /// commands' output or input.
    ProcSubst(Rc<List>, bool),
}

/// A parameter expansion.
#[derive(Debug, Clone)]
pub struct Param {
    /// The name: a variable, a digit string, or one of `@ * # ? - $ ! 0`.
    pub name: Vec<u8>,
    /// `[index]` after the name (`@`, `*` or an arithmetic word).
    pub index: Option<Word>,
    /// `${#name}`.
    pub length: bool,
    /// `${!name}`: indirect.
    pub indirect: bool,
    /// The operator applied, if any.
    pub op: ParamOp,
}

/// What `${name OP …}` does.
#[derive(Debug, Clone)]
pub enum ParamOp {
    /// Plain value.
    None,
    /// `-`, `=`, `+`, `?` with the colon flag (`:-` treats empty as unset).
    Default {
        /// One of `-`, `=`, `+`, `?`.
        kind: u8,
        /// Written with `:`.
        colon: bool,
        /// The word.
        word: Word,
    },
    /// `#`, `##`, `%`, `%%`.
    Trim {
        /// Remove from the end (`%`).
        suffix: bool,
        /// Longest match (doubled operator).
        longest: bool,
        /// The pattern.
        pattern: Word,
    },
    /// `/pat/rep`, `//pat/rep`, `/#pat/rep`, `/%pat/rep`.
    Replace {
        /// Replace every match.
        all: bool,
        /// Anchored: `#` start, `%` end, `0` none.
        anchor: u8,
        /// The pattern.
        pattern: Word,
        /// The replacement.
        with: Word,
    },
    /// `:offset[:length]`.
    Slice {
        /// Arithmetic text.
        offset: Word,
        /// Arithmetic text.
        length: Option<Word>,
    },
    /// `^`, `^^`, `,`, `,,`.
    Case {
        /// Upper (`^`) rather than lower (`,`).
        upper: bool,
        /// Every character rather than the first.
        all: bool,
    },
}

/// A redirection.
#[derive(Debug, Clone)]
pub struct Redir {
    /// The file descriptor written before the operator, if any.
    pub fd: Option<u32>,
    /// The operator.
    pub op: RedirOp,
    /// The target word (a file, a descriptor number or `-`).
    pub target: Word,
    /// For `<<`/`<<-`: the body, filled in when the parser reaches it.
    pub heredoc: Option<Rc<HereDoc>>,
}

/// Redirection operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirOp {
    /// `<`
    In,
    /// `>` (and `>|`)
    Out,
    /// `>>`
    Append,
    /// `<>`
    ReadWrite,
    /// `<&`
    DupIn,
    /// `>&`
    DupOut,
    /// `&>` (stdout and stderr to a file)
    OutErr,
    /// `&>>`
    AppendErr,
    /// `<<` and `<<-`
    HereDoc,
    /// `<<<`
    HereString,
}

/// A here-document's body.
#[derive(Debug, Default)]
pub struct HereDoc {
    /// Set once the parser has read the lines after the command.
    pub body: OnceCell<Word>,
}
