//! Parser unit tests.

use super::*;

fn one(src: &str) -> Command {
    let list = parse_all(src.as_bytes()).expect("parses");
    list[0].and_or.first.cmds[0].clone()
}

#[test]
fn commands_one_at_a_time_and_errors_with_lines() {
    let mut p = Parser::new(b"echo a; echo b\necho c\n)\necho d", 0);
    assert_eq!(p.next_command().unwrap().unwrap().len(), 2);
    assert_eq!(p.next_command().unwrap().unwrap().len(), 1);
    let e = p.next_command().unwrap_err();
    assert_eq!(e.line, 3);
    assert!(e.msg.contains("unexpected token `)'"), "{}", e.msg);
}

#[test]
fn heredoc_bodies_are_filled_at_the_newline() {
    let list = parse_all(b"cat <<A <<-'B'\n$x\nA\n\t$y\n\tB\necho after").unwrap();
    let Command::Simple(s) = &list[0].and_or.first.cmds[0] else {
        panic!("simple")
    };
    let a = s.redirs[0].heredoc.as_ref().unwrap().body.get().unwrap();
    assert!(matches!(a.as_slice(), [Part::Param(_), Part::Quoted(nl)] if nl == b"\n"));
    let b = s.redirs[1].heredoc.as_ref().unwrap().body.get().unwrap();
    assert!(matches!(b.as_slice(), [Part::Quoted(t)] if t == b"$y\n"));
    assert_eq!(list.len(), 2);
}

#[test]
fn words_keep_their_quoting() {
    let Command::Simple(s) = one("echo a'b'\"c$d\"\\e ~/x") else {
        panic!("simple")
    };
    assert!(matches!(
        &s.words[1][..],
        [
            Part::Lit(_),
            Part::Quoted(_),
            Part::Double(_),
            Part::Quoted(_)
        ]
    ));
    assert!(matches!(&s.words[2][..], [Part::Tilde(n), Part::Lit(_)] if n.is_empty()));
}

#[test]
fn compound_commands_and_functions() {
    assert!(
        matches!(one("if a; then b; elif c; then d; else e; fi"), Command::Compound(c, _) if matches!(*c, Compound::If { ref arms, otherwise: Some(_) } if arms.len() == 2))
    );
    assert!(
        matches!(one("for i in 1 2; do :; done"), Command::Compound(c, _) if matches!(*c, Compound::For { words: Some(ref w), .. } if w.len() == 2))
    );
    assert!(
        matches!(one("for ((i=0;i<2;i++)); do :; done"), Command::Compound(c, _) if matches!(*c, Compound::ArithFor { .. }))
    );
    assert!(
        matches!(one("case x in a|b) :;; *) :;; esac"), Command::Compound(c, _) if matches!(*c, Compound::Case { ref arms, .. } if arms.len() == 2))
    );
    assert!(matches!(one("f() { :; }"), Command::FuncDef(n, _) if n == b"f"));
    assert!(
        matches!(one("[[ -f x && $a == b* ]]"), Command::Compound(c, _) if matches!(*c, Compound::Cond(Cond::And(..))))
    );
    assert!(
        matches!(one("(( x += 1 ))"), Command::Compound(c, _) if matches!(*c, Compound::Arith(_)))
    );
    assert!(
        matches!(one("( ( a ) )"), Command::Compound(c, _) if matches!(*c, Compound::Subshell(_)))
    );
}

#[test]
fn nesting_and_incomplete_input_are_errors() {
    let deep = format!("{}x{}", "$(".repeat(500), ")".repeat(500));
    let e = parse_all(deep.as_bytes()).unwrap_err();
    assert!(e.msg.contains("nesting too deep"));
    for src in [
        "if true; then",
        "echo \"open",
        "echo 'open",
        "case x in",
        "f() {",
        "echo $(",
        "cat <<EOF",
        "echo ${x",
    ] {
        match parse_all(src.as_bytes()) {
            Err(e) => assert!(!e.msg.is_empty(), "{src}"),
            Ok(_) => assert!(src.starts_with("cat <<"), "{src} parsed"),
        }
    }
}
