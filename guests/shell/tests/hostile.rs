//! Hostile sizes and edge values: every one ends in a clean error of its
//! step (a message, a status) or a correct result, never a panic or an
//! allocation the size of the request. (Depth and chains: `limits.rs`.)

mod common;
use common::*;

/// A literal of `n` bytes `a`, made inside the shell.
fn big(n: usize) -> String {
    format!("$(printf '%{n}s' | tr ' ' a)")
}

#[test]
fn expansions_have_a_total_cap() {
    let w = Work::new();
    // Seven words of 10 MB each: more than 64 MiB for one command.
    let o = w.sh(&format!(
        "x={}; set -- \"$x\" \"$x\" \"$x\" \"$x\" \"$x\" \"$x\" \"$x\"\necho next $#",
        big(10_000_000)
    ));
    assert!(o.err().contains("exceed 64 MiB"), "{}", o.err());
    assert_eq!(o.out(), "next 0\n");
    // `eval` has the script cap its documentation promised.
    let o = w.sh(&format!(
        "x={}; eval \"$x\" \"$x\"; echo $?",
        big(9_000_000)
    ));
    assert!(o.err().contains("script larger than 16 MiB"), "{}", o.err());
    assert_eq!(o.out(), "1\n");
    // `${x//p/r}` checks its result as it grows.
    let o = w.sh(&format!(
        "x={}; y=${{x//a/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa}}\necho $?",
        big(1_000_000)
    ));
    assert!(o.err().contains("exceeds 16 MiB"), "{}", o.err());
    assert_eq!(o.out(), "1\n");
}

#[test]
fn subshells_share_variables_until_they_change_them() {
    let w = Work::new();
    let o = w.sh(&format!(
        "big={}; a=(1 2); declare -A m=([k]=v); x=1\n\
         for i in $(seq 200); do y=$(echo ${{#big}}); done; echo $y\n\
         (x=2; a[0]=9; m[k]=w; big=; echo $x ${{a[0]}} ${{m[k]}} ${{#big}})\n\
         echo $x ${{a[0]}} ${{m[k]}} ${{#big}}\n\
         f() {{ local x=3; a[1]=8; echo $x; }}; f; echo $x ${{a[@]}}",
        big(8_000_000)
    ));
    assert_eq!(
        o.out(),
        "8000000\n2 9 w 0\n1 1 v 8000000\n3\n1 1 8\n",
        "{}",
        o.err()
    );
}

#[test]
fn printf_widths_are_checked_before_anything_is_allocated() {
    let w = Work::new();
    for script in [
        "printf '%*s' 2000000000 x",
        "printf '%.9999999999d' 1",
        "printf '%020000000000d' 1",
        "printf -v v '%*s' 3000000000 x",
        "awk 'BEGIN { printf \"%*d\", 2000000000, 1 }'",
        "awk 'BEGIN { x = sprintf(\"%.3000000000f\", 1) }'",
        "seq -f '%2000000000g' 1 2",
    ] {
        let o = w.sh(script);
        assert_ne!(o.status, 0, "{script}");
        assert!(o.err().contains("limit of 16 MiB"), "{script}: {}", o.err());
        assert!(o.stdout.len() < 1000, "{script}");
    }
    // A large precision is made in linear time.
    let o = w.sh("printf '%.2000000d' 7 | wc -c; printf '%.1000000f' 1 | wc -c");
    assert_eq!(o.out(), "2000000\n1000002\n", "{}", o.err());
    // printf's output as a whole is capped too.
    let o = w.sh("printf '%16000000s' $(seq 5) | wc -c");
    assert!(
        o.err().contains("output exceeds the limit of 64 MiB"),
        "{}",
        o.err()
    );
}

#[test]
fn replacements_check_their_output_as_it_grows() {
    let w = Work::new();
    let rep = "a".repeat(40);
    let o = w.sh(&format!(
        "awk 'BEGIN {{ s = sprintf(\"%1000000s\", \"\"); gsub(/ /, \"{rep}\", s); print \"never\" }}'; echo $?"
    ));
    assert!(o.err().contains("string too large"), "{}", o.err());
    assert_eq!(o.out(), "2\n");
    let o = w.sh(&format!(
        "printf '%1000000s\\n' | sed 's/ /{rep}/g'; echo $?"
    ));
    assert!(o.err().contains("pattern space exceeds"), "{}", o.err());
    assert_eq!(o.out(), "4\n");
    let o = w.sh(&format!(
        "x={}; echo \"$x\" | xargs -I{{}} echo {}; echo $?",
        big(1_000_000),
        "{}".repeat(20)
    ));
    assert!(o.err().contains("argument line too long"), "{}", o.err());
    assert_eq!(o.out(), "1\n");
}

#[test]
fn brace_sequences_use_checked_arithmetic() {
    let w = Work::new();
    let o = w.sh("echo {-9223372036854775808..9223372036854775807}\necho $?");
    assert!(o.err().contains("brace expansion"), "{}", o.err());
    assert_eq!(o.out(), "1\n");
    let o = w.sh(
        "echo {1..5..-9223372036854775808}; echo {9223372036854775800..9223372036854775807..5}; \
         echo {-9223372036854775807..-9223372036854775808}; echo {a..e..2} x{1..3}y{a,b} {05..1..2}",
    );
    assert_eq!(
        o.out(),
        "1\n9223372036854775800 9223372036854775805\n-9223372036854775807 -9223372036854775808\n\
         a c e x1ya x1yb x2ya x2yb x3ya x3yb 05 03 01\n",
        "{}",
        o.err()
    );
    // The words' bytes are counted: a long literal times many elements.
    let o = w.sh(&format!("echo {}{{1..100000}} | wc -c", "a".repeat(1000)));
    assert!(o.err().contains("brace expansion too large"), "{}", o.err());
    // Many unmatched braces are one pass each, not a rescan per brace.
    let o = w.sh(&format!("echo {}{{a,b}} | wc -c", "{".repeat(200_000)));
    assert_eq!(o.out(), "400004\n", "{}", o.err());
}

#[test]
fn sed_spaces_are_capped_and_output_streams() {
    let w = Work::new();
    let o = w.sh("echo x | sed ':a;G;H;ba'; echo $?");
    assert!(
        o.err().contains("exceeds the limit of 16 MiB"),
        "{}",
        o.err()
    );
    assert!(o.out().ends_with("4\n"));
    // An endless printer stops when its reader is gone.
    let o = w.sh("echo x | sed ':a;p;ba' | head -n 2; echo done");
    assert_eq!(o.out(), "x\nx\ndone\n", "{}", o.err());
    // `w` files are written as they go, `/dev/stdout` in order.
    let o = w.sh("printf 'a\\nb\\n' | sed -n 'w out.txt\np;w /dev/stdout'; cat out.txt");
    assert_eq!(o.out(), "a\na\nb\nb\na\nb\n", "{}", o.err());
    // `-i` keeps the file when the result would be too large.
    w.write("f.txt", "x\n");
    let o = w.sh("sed -i ':a;G;H;ba' f.txt; echo $?; cat f.txt");
    assert_eq!(o.out(), "4\nx\n", "{}", o.err());
}

#[test]
fn awk_fields_records_and_outputs_are_bounded() {
    let w = Work::new();
    for (script, msg) in [
        ("BEGIN { $0 = \"a\"; NF = 1e9 }", "NF too large"),
        (
            "BEGIN { OFS = sprintf(\"%1000000s\", \"\"); $0 = \"a\"; NF = 100 }",
            "record too large",
        ),
        (
            "BEGIN { FS = \"\"; $0 = sprintf(\"%2000000s\", \"\"); print NF }",
            "too many fields",
        ),
    ] {
        let o = w.sh(&format!("awk '{script}'; echo $?"));
        assert!(o.err().contains(msg), "{script}: {}", o.err());
        assert_eq!(o.out(), "2\n");
    }
    // Redirected output is written as printed, and `| cmd` at close.
    let o = w.sh(
        "awk 'BEGIN { for (i = 0; i < 100000; i++) print i > \"f\"; print \"x\" | \"cat\"; close(\"cat\"); print \"y\" >> \"f\" }'; wc -l < f; tail -1 f",
    );
    assert_eq!(o.out(), "x\n100001\ny\n", "{}", o.err());
    // An endless printer stops when its reader is gone.
    let o = w.sh("awk 'BEGIN { while (1) print \"y\" }' | head -n 1; echo done");
    assert_eq!(o.out(), "y\ndone\n");
}

#[test]
fn read_mapfile_nl_xxd_yes_and_tee_edges() {
    let w = Work::new();
    let o = w.sh(&format!(
        "read -a a <<< \"{}x\"; echo ${{#a[@]}}; IFS=: read -a b <<< 'a::b:'; echo ${{#b[@]}}",
        " ".repeat(100_000)
    ));
    assert_eq!(o.out(), "1\n3\n", "{}", o.err());
    let o = w.sh("nl -w 2000000000 /dev/null; echo $?; xxd -c 1000000000 /dev/null; echo $?");
    assert_eq!(o.out(), "1\n1\n");
    assert!(
        o.err().contains("invalid line number field width"),
        "{}",
        o.err()
    );
    assert!(o.err().contains("max. 256"), "{}", o.err());
    let o = w.sh("printf 'a\\nb\\n' | nl -v 9223372036854775807; echo $?");
    assert!(o.err().contains("line number overflow"), "{}", o.err());
    let o = w.sh("printf abc | xxd -p -c 0; printf abcd | xxd -p -c 2");
    assert_eq!(o.out(), "616263\n6162\n6364\n");
    let o = w.sh("yes \"$(printf '%70000s')\" | head -n 1 | wc -c");
    assert_eq!(o.out(), "70001\n");
    let o = w.sh("echo hi | tee /dev/stdout");
    assert_eq!(o.out(), "hi\nhi\n");
}

#[test]
fn reads_are_capped_before_reading() {
    let w = Work::new();
    w.write("big.sh", format!("# {}\necho ran\n", "x".repeat(17 << 20)));
    let o = w.sh(". ./big.sh; echo $?; sh big.sh; echo $?; x=$(<big.sh); echo $? ${#x}");
    assert_eq!(o.out(), "1\n127\n", "{}", o.err());
    assert!(o.err().contains("script larger than 16 MiB"), "{}", o.err());
    assert!(
        o.err().contains("exceeds the limit of 16 MiB"),
        "{}",
        o.err()
    );
    // Operands held together share one cap.
    w.write("m.txt", vec![b'\n'; 100 << 20]);
    let o = w.sh("sort m.txt m.txt m.txt | wc -l; echo ${PIPESTATUS[0]}");
    assert!(o.err().contains("File too large"), "{}", o.err());
}

#[test]
fn panics_found_in_review_are_errors() {
    let w = Work::new();
    let o = w.sh("x=; echo \"${!x}\"; echo $?\ny='a b'; echo \"${!y}\"\necho ok");
    assert_eq!(o.out(), "ok\n", "{}", o.err());
    assert!(o.err().contains("invalid variable name"), "{}", o.err());
    let o = w.sh("printf 'é\\n\\xff\\n2e3\\n-1\\n' | sort -g | od -c | head -n 1");
    assert!(o.status == 0 && !o.out().is_empty(), "{}", o.err());
    w.write("f", "abc\n");
    let o = w.sh(
        "head -c -9223372036854775808 f | wc -c; tail -c 9223372036854775808 f | wc -c; \
         sort -k 1.18446744073709551615 -k 18446744073709551615 f; echo $?",
    );
    assert_eq!(o.out(), "0\n4\nabc\n0\n", "{}", o.err());
    // A pax record whose length ends before its own text.
    let mut h = [0u8; 512];
    h[..5].copy_from_slice(b"x.pax");
    h[100..107].copy_from_slice(b"0000644");
    h[124..135].copy_from_slice(b"00000000010");
    h[156] = b'x';
    h[257..263].copy_from_slice(b"ustar\0");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| b as u32).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    let mut t = h.to_vec();
    let mut body = [0u8; 512];
    body[..10].copy_from_slice(b"1 path=x\n\n");
    t.extend_from_slice(&body);
    t.extend_from_slice(&[0u8; 1024]);
    w.write(".plimsoll-shell/ws.tar", &t);
    let o = w.sh(common::steps::HYDRATE_STEP);
    assert_eq!(o.status, 2);
    assert!(o.err().contains("bad pax header"), "{}", o.err());
}

#[test]
fn read_step_paths_that_look_like_options() {
    let w = Work::new();
    w.write("-5", "abcdef");
    let o = w.sh("head -c 3 -- -5; echo; head -n 1 -- -5; echo; tail -c 2 -- -5");
    assert_eq!(o.out(), "abc\nabcdef\nef", "{}", o.err());
    // Counts above 32 bits are not truncated (the guest is wasm32).
    let o = w.sh("head -c 4294967296 -- -5; echo; tail -n 4294967297 -- -5");
    assert_eq!(o.out(), "abcdef\nabcdef", "{}", o.err());
}

#[test]
fn arrays_and_unset_edges() {
    let w = Work::new();
    let o = w.sh("a=(1 2); a[-9]=x; echo $? ${#a[@]} ${a[@]}");
    assert_eq!(o.out(), "1 2 1 2\n", "{}", o.err());
    assert!(o.err().contains("bad array subscript"), "{}", o.err());
    let o = w.sh("ro=(1 2); readonly ro; unset 'ro[0]'; echo $? ${ro[@]}; unset '[x]'; echo $?; declare -p | grep -c '^declare -- =' ");
    assert_eq!(o.out(), "1 1 2\n1\n0\n", "{}", o.err());
}

#[test]
fn tar_streams_large_members_and_skips_its_own_archive() {
    let w = Work::new();
    w.write("d/big.bin", vec![7u8; 20 << 20]);
    w.write("d/small.txt", "s\n");
    let o = w.sh(
        "tar -cf d/a.tar d; echo $?; tar -tf d/a.tar; mkdir out; tar -xf d/a.tar -C out; cmp d/big.bin out/d/big.bin && echo same; tar -cf - d/small.txt | tar -tf -",
    );
    assert_eq!(
        o.out(),
        "0\nd/\nd/big.bin\nd/small.txt\nsame\nd/small.txt\n",
        "{}",
        o.err()
    );
    assert!(
        o.err().contains("file is the archive; not dumped"),
        "{}",
        o.err()
    );
}

#[test]
fn programs_invocations_are_capped() {
    let w = Work::new();
    let o = w.sh(&format!(
        "x={}; export A=\"$x\" B=\"$x\" C=\"$x\" D=\"$x\" E=\"$x\"; python3 -c pass; echo $?",
        big(14_000_000)
    ));
    assert_eq!(o.out(), "126\n", "{}", o.err());
    assert!(o.err().contains("Argument list too long"), "{}", o.err());
    assert!(w.programs.calls.borrow().is_empty());
}

#[test]
fn trimming_long_values_is_linear() {
    let w = Work::new();
    let o = w.sh(&format!(
        "x={}b; echo ${{#x}} ${{x##*a}} ${{x%%a*}}; y=${{x#*a}}; z=${{x%a*}}; echo ${{#y}} ${{#z}}",
        big(2_000_000)
    ));
    assert_eq!(o.out(), "2000001 b\n2000000 1999999\n", "{}", o.err());
}
