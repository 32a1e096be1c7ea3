//! awk's syntax tree.

use std::collections::HashMap;

/// An expression.
#[derive(Debug, Clone)]
pub enum Expr {
    /// Number literal.
    Num(f64),
    /// String literal.
    Str(Vec<u8>),
    /// `/re/` alone: matches `$0`.
    Re(Vec<u8>),
    /// A variable.
    Var(String),
    /// `$e`
    Field(Box<Expr>),
    /// `a[i, j]`
    Index(String, Vec<Expr>),
    /// `lvalue op= e` (`op` is `=`, `+=`, …).
    Assign(&'static str, Box<Expr>, Box<Expr>),
    /// `c ? a : b`
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `a && b && …` (chains are flat: a long one is not a deep tree)
    And(Vec<Expr>),
    /// `a || b || …`
    Or(Vec<Expr>),
    /// `!e`
    Not(Box<Expr>),
    /// Unary minus or plus.
    Neg(Box<Expr>, bool),
    /// Arithmetic and comparison operators.
    Bin(&'static str, Box<Expr>, Box<Expr>),
    /// `a + b - c …`, `a * b / c …`: left-associative arithmetic, flat.
    Chain(Box<Expr>, Vec<(&'static str, Expr)>),
    /// `e ~ re`, `e !~ re`.
    Match(Box<Expr>, Box<Expr>, bool),
    /// Concatenation of two or more operands.
    Concat(Vec<Expr>),
    /// `(i, j) in a`
    In(Vec<Expr>, String),
    /// `++x`, `x--`: (pre, increment, lvalue).
    Incr(bool, bool, Box<Expr>),
    /// A user function call.
    Call(String, Vec<Expr>),
    /// A builtin function call.
    Builtin(String, Vec<Expr>),
    /// `getline [var] [< file]`, `cmd | getline [var]`.
    Getline {
        /// The variable, if any.
        var: Option<Box<Expr>>,
        /// `< file`
        file: Option<Box<Expr>>,
        /// `cmd |`
        cmd: Option<Box<Expr>>,
    },
    /// `(a, b)` before `in`.
    Group(Vec<Expr>),
}

/// Output redirection of print/printf.
#[derive(Debug, Clone)]
pub enum Redirect {
    /// `> file`
    File(Expr),
    /// `>> file`
    Append(Expr),
    /// `| cmd`
    Pipe(Expr),
}

/// A statement.
#[derive(Debug, Clone)]
pub enum Stmt {
    /// `print args [redir]`
    Print(Vec<Expr>, Option<Redirect>),
    /// `printf fmt, args [redir]`
    Printf(Vec<Expr>, Option<Redirect>),
    /// An expression statement.
    Expr(Expr),
    /// `if`
    If(Expr, Box<Stmt>, Option<Box<Stmt>>),
    /// `while`
    While(Expr, Box<Stmt>),
    /// `do … while`
    Do(Box<Stmt>, Expr),
    /// `for (init; cond; step)`
    For(
        Option<Box<Stmt>>,
        Option<Expr>,
        Option<Box<Stmt>>,
        Box<Stmt>,
    ),
    /// `for (k in a)`
    ForIn(String, String, Box<Stmt>),
    /// `{ … }`
    Block(Vec<Stmt>),
    /// `next`
    Next,
    /// `nextfile`
    NextFile,
    /// `exit [e]`
    Exit(Option<Expr>),
    /// `return [e]`
    Return(Option<Expr>),
    /// `break`
    Break,
    /// `continue`
    Continue,
    /// `delete a[i]` / `delete a`
    Delete(String, Option<Vec<Expr>>),
}

/// A rule's pattern.
#[derive(Debug, Clone)]
pub enum Pattern {
    /// Every record.
    All,
    /// An expression.
    Expr(Expr),
    /// `a, b`: the rule index (for its range state) is its position.
    Range(Expr, Expr),
}

/// A user function.
#[derive(Debug, Clone)]
pub struct Func {
    /// Parameter names.
    pub params: Vec<String>,
    /// Body.
    pub body: Vec<Stmt>,
}

/// A whole program.
#[derive(Debug, Clone, Default)]
pub struct Program {
    /// `BEGIN` blocks.
    pub begin: Vec<Vec<Stmt>>,
    /// `END` blocks.
    pub end: Vec<Vec<Stmt>>,
    /// Pattern-action rules (`None` action = print).
    pub rules: Vec<(Pattern, Option<Vec<Stmt>>)>,
    /// Functions.
    pub funcs: HashMap<String, Func>,
}
