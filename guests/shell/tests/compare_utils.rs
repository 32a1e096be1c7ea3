//! The utilities, against GNU coreutils, grep, sed, gawk/mawk, find, diff
//! and tar on this machine (C locale).

mod common;
use common::*;

const TEXT: &[(&str, &str)] = &[
    (
        "t.txt",
        "alpha beta\ngamma delta epsilon\n\nzeta\nalpha again\n",
    ),
    ("n.txt", "10\n9\n100\n-3\n2.5\n9\n"),
    (
        "csv.txt",
        "name,age,city\nann,31,Oslo\nbob,27,Rome\ncy,45,Lima\n",
    ),
    ("noeol.txt", "first\nlast no newline"),
    ("tabs.txt", "a\tb\tc\nd\te\tf\n"),
    ("dup.txt", "a\na\nb\nB\nb\nc\na\n"),
    ("src/main.py", "import os\ndef main():\n    print('hi')\n"),
    ("src/util.py", "def helper(x):\n    return x * 2\n"),
    ("src/sub/deep.txt", "deep text\nmore\n"),
    ("src/.hidden.py", "secret = 1\n"),
    ("README.md", "# Title\n\nSome *text* here.\n"),
];

#[test]
fn cat_head_tail_wc() {
    all_same(
        TEXT,
        &[
            "cat t.txt noeol.txt; echo",
            "cat -n t.txt; cat -b t.txt; cat -A tabs.txt; cat -s t.txt; cat -E noeol.txt",
            "head -2 t.txt; head -n 1 n.txt csv.txt; head -c 7 t.txt; echo; head -n -2 t.txt",
            "head -c -5 t.txt; echo; head nosuch; echo $?",
            "tail -2 t.txt; tail -n +3 n.txt; tail -c 5 noeol.txt; echo; tail -n 1 t.txt n.txt",
            "wc t.txt; wc -l t.txt n.txt; wc -w < t.txt; wc -c noeol.txt; cat t.txt | wc; wc -L t.txt",
            "printf 'a b\\nc' | wc -lwc",
            "seq 10 | head -3 | tail -1",
            "yes | head -3; yes ab | head -n 2",
            "tac n.txt; rev csv.txt",
            "nl t.txt; nl -ba t.txt",
            "paste csv.txt n.txt; paste -d, n.txt n.txt; paste -s n.txt; seq 4 | paste - -",
            "fold -w 5 t.txt",
            "echo hi | tee tee1.txt tee2.txt > /dev/null; cat tee1.txt tee2.txt; echo more | tee -a tee1.txt; cat tee1.txt",
        ],
    );
}

#[test]
fn sort_uniq_cut_tr() {
    all_same(
        TEXT,
        &[
            "sort n.txt; sort -n n.txt; sort -rn n.txt; sort -u n.txt; sort -g n.txt",
            "sort -t, -k2,2n csv.txt; sort -t, -k3 csv.txt; sort -k2 t.txt",
            "sort dup.txt | uniq; sort dup.txt | uniq -c; sort dup.txt | uniq -d; sort dup.txt | uniq -u; uniq -i dup.txt",
            "sort -f dup.txt; sort -r dup.txt",
            "printf 'b 2\\na 10\\nc 1\\n' | sort -k2 -n; printf '1.10\\n1.9\\n1.2\\n' | sort -V",
            "printf '2K\\n1M\\n3\\n' | sort -h",
            "cut -d, -f1,3 csv.txt; cut -d, -f2- csv.txt; cut -c1-3 t.txt; cut -f2 tabs.txt; cut -d' ' -f2 t.txt",
            "cut -d, -f1 --complement csv.txt; echo abc | cut -c2; echo 'a:b' | cut -d: -f3",
            "echo Hello | tr a-z A-Z; echo 'a  b   c' | tr -s ' '; echo abc123 | tr -d 0-9; echo abc | tr -cd a-b; echo",
            "echo 'hello world' | tr '[:lower:]' '[:upper:]'; printf 'a\\nb\\n' | tr '\\n' ','; echo",
            "echo abcabc | tr abc xy",
            "comm <(sort dup.txt | uniq) <(printf 'a\\nz\\n'); comm -12 <(echo a) <(echo a)",
        ],
    );
}

#[test]
fn grep_and_rg_like_gnu() {
    all_same(
        TEXT,
        &[
            "grep alpha t.txt; grep -n a t.txt; grep -c a t.txt; grep -v a t.txt; grep -i ALPHA t.txt",
            "grep -w alpha t.txt; grep -x zeta t.txt; grep -o 'al[a-z]*' t.txt; grep -l alpha t.txt n.txt; grep -L alpha t.txt n.txt",
            "grep -E 'ga(m|n)ma' t.txt; grep 'ga\\(m\\)ma' t.txt; grep -F 'a.b' t.txt; echo $?",
            "grep -e beta -e zeta t.txt; grep -h a t.txt csv.txt; grep -H zeta t.txt",
            "grep -r 'def ' src | sort; grep -rn print src; grep -rl def . | sort; grep -r --include='*.py' import .",
            "grep -rh secret src; grep -r secret src --exclude-dir=sub",
            "grep -A1 gamma t.txt; grep -B1 zeta t.txt; grep -C1 zeta t.txt; grep -m1 a t.txt",
            "grep -q alpha t.txt && echo yes; grep -q nothing t.txt || echo no",
            "grep nothing t.txt; echo $?; grep x nosuch; echo $?; grep -s x nosuch; echo $?",
            "grep '[[:digit:]]\\{2,\\}' n.txt; grep -E '^[0-9]+$' n.txt; grep -c '' t.txt",
            "grep -- -3 n.txt; grep -e -3 n.txt",
            "cat t.txt | grep -n gamma; echo x | grep -H x",
            "grep 'alpha$' t.txt; grep '^$' t.txt | wc -l; grep -E 'a{2}' dup.txt; echo $?",
            "grep -ri HELPER src; grep -rn 'return' src/util.py",
            "grep -E '(' t.txt; echo $?",
        ],
    );
}

#[test]
fn sed_like_gnu() {
    all_same(
        TEXT,
        &[
            "sed 's/a/A/' t.txt; sed 's/a/A/g' t.txt; sed 's/a/A/2' t.txt; sed -n 's/alpha/X/p' t.txt",
            "sed -n '2,3p' t.txt; sed '2d' t.txt; sed '/^$/d' t.txt; sed -n '$p' t.txt; sed '1!d' t.txt",
            "sed -E 's/([a-z]+) ([a-z]+)/\\2 \\1/' t.txt; sed 's/\\(al\\)\\(pha\\)/\\2\\1/' t.txt",
            "sed 's#a#/#g' t.txt; sed 's|/|_|g' csv.txt; echo ./x/y | sed 's#^\\./##'",
            "sed -n '/gamma/,/zeta/p' t.txt; sed '/gamma/,+1d' t.txt; sed '0~2d' n.txt; sed -n '1~2p' n.txt",
            "sed 's/.*/[&]/' n.txt; sed 's/a/\\n/' csv.txt; sed 'y/abc/xyz/' t.txt",
            "sed '1i\\\nheader' n.txt; sed '$a footer' n.txt; sed '2c\\\nchanged' n.txt; sed '/9/c nine' n.txt",
            "sed -n '/alpha/=' t.txt; sed -n 'l' tabs.txt",
            "sed 'N;s/\\n/+/' n.txt; sed '$!N;P;D' dup.txt; sed -n 'h;n;G;p' n.txt",
            "sed -e 's/a/1/' -e 's/b/2/' t.txt; sed 's/a/1/;s/e/2/' t.txt",
            "sed '2q' t.txt; sed -n '/delta/{s/gamma/G/;p}' t.txt; sed '/alpha/!s/a/_/g' t.txt",
            "sed 's/x*/-/g' <<< abc; sed 's/b*/X/2' <<< abc",
            "sed 's/\\(.*\\)/\\U\\1/' t.txt; sed -E 's/(\\w+)/\\u\\1/g' t.txt",
            "cp t.txt w.txt; sed -i 's/alpha/OMEGA/' w.txt; cat w.txt; sed -i.bak '1d' w.txt; cat w.txt w.txt.bak",
            "sed -n '2{p;q}' t.txt; sed ':a;N;$!ba;s/\\n/,/g' n.txt",
            "sed 's/[0-9]\\+/<&>/g' csv.txt; sed -E 's/[0-9]+/<&>/g' csv.txt",
            "printf 'x' | sed 's/x/y/'; echo; sed p noeol.txt",
            "sed 's/a/b' t.txt; echo $?; sed -n 'k' t.txt; echo $?",
        ],
    );
}

#[test]
fn awk_like_gawk() {
    all_same(
        TEXT,
        &[
            "awk '{print $1}' t.txt; awk '{print NF}' t.txt; awk '{print $NF}' t.txt",
            "awk -F, '{print $2}' csv.txt; awk -F, 'NR>1{s+=$2} END{print s, s/(NR-1)}' csv.txt",
            "awk 'BEGIN{x=3; y=x*2; print x, y, x^2, 7%3, -x}'",
            "awk '/alpha/' t.txt; awk '!/alpha/' t.txt; awk 'NR==2,NR==4' t.txt",
            "awk '{n[$1]++} END{for (k in n) print k, n[k]}' dup.txt | sort",
            "awk 'BEGIN{printf \"%5.2f|%-4s|%03d|%x|%c|%s\\n\", 3.14159, \"ab\", 7, 255, 65, \"end\"}'",
            "awk '{ $2 = \"X\"; print }' t.txt; awk 'BEGIN{OFS=\"-\"}{$1=$1; print}' t.txt",
            "awk '{print length($0), length}' t.txt; awk 'BEGIN{print substr(\"hello\",2,3), index(\"hello\",\"ll\"), toupper(\"ab\"), tolower(\"CD\")}'",
            "awk 'BEGIN{n=split(\"a:b:c\",arr,\":\"); print n, arr[1], arr[3]}'",
            "awk '{gsub(/a/,\"A\"); print}' t.txt; awk '{sub(/a/,\"[&]\"); print}' t.txt",
            "awk 'BEGIN{s=\"foo.bar\"; if (match(s, /\\.b/)) print RSTART, RLENGTH}'",
            "awk -v x=5 'BEGIN{print x+1}'; awk 'BEGIN{print ENVIRON[\"HOME\"] != \"\"}'",
            "awk 'function f(a,b){return a*b} BEGIN{print f(3,4)}'",
            "awk 'function fill(arr){arr[\"k\"]=1} BEGIN{fill(z); print length(z), z[\"k\"]}'",
            "awk 'BEGIN{for(i=0;i<3;i++) print i; while(j<2){print \"w\" j; j++}; do {k++} while (k<5); print k}'",
            "awk 'NR%2==0{next} {print NR\": \"$0}' n.txt",
            "awk '{s=s $0 \",\"} END{print s}' n.txt",
            "awk 'BEGIN{x[1,2]=3; for (k in x) {split(k,p,SUBSEP); print p[1], p[2]}}'",
            "awk '$1 > 5' n.txt; awk '$1 == \"9\"' n.txt; awk '$1 < \"2\"' n.txt",
            "awk 'END{print NR}' t.txt; awk 'BEGIN{while ((getline line < \"n.txt\") > 0) n++; print n}'",
            "awk 'BEGIN{\"echo hi\" | getline v; print v}'",
            "awk '{print > \"out.txt\"} END{close(\"out.txt\"); while((getline l < \"out.txt\")>0) print \"got\", l}' n.txt",
            "awk 'BEGIN{print 1==1.0, \"a\"<\"b\", 2<10, \"2\"<\"10\"}'; echo 10 2 | awk '{print ($1<$2)}'",
            "awk 'BEGIN{printf \"%d %i %s\\n\", \"12abc\", 3.9, 1e6}'; awk 'BEGIN{print 0.1+0.2, 1e6, 1000000*3, 2/3}'",
            "awk -F'\\t' '{print $2}' tabs.txt; awk 'BEGIN{FS=\",\"} {print $1}' csv.txt",
            "awk 'BEGIN{exit 3} END{print \"end\"}'; echo $?",
            "awk '{print $1; exit}' t.txt; awk 'NR==1{print; nextfile} {print \"no\"}' t.txt n.txt",
            "awk 'BEGIN{a[\"x\"]; if (\"x\" in a) print \"in\"; delete a[\"x\"]; if (!(\"x\" in a)) print \"gone\"}'",
            "awk 'BEGIN{ RS=\"\" } { print NR \": \" $1 }' t.txt",
            "awk '{ printf \"%s|\", $0 } END { print \"\" }' noeol.txt",
            "seq 5 | awk '{ sum += $1 } END { print sum, sum/NR }'",
            "awk 'BEGIN { x = \"3x\"; print x+0, -\"2\" }'",
            "echo 'a b c' | awk '{ $5 = \"e\"; print; print NF }'; echo 'a b c' | awk '{ NF = 2; print }'",
            "awk 'BEGIN { printf(\"%s %s\\n\", \"p\", \"q\") }'; awk 'BEGIN { print(1)(2) }'",
            "awk 'BEGIN { x = 1; x += 2; x *= 3; x -= 1; x /= 2; x %= 3; x ^= 2; print x }'",
            "awk '{ print $1 > \"/dev/stderr\" }' n.txt 2>/dev/null; echo done",
            "awk 'BEGIN { print index(\"abc\", \"\"), split(\"\", q), int(-3.7), int(\"4.2x\") }'",
            "awk 'BEGIN { if (!x) print \"uninit false\"; if (x == 0 && x == \"\") print \"both\" }'",
        ],
    );
}

#[test]
fn find_ls_and_files() {
    all_same(
        TEXT,
        &[
            "find . -name '*.py' | sort; find src -type d | sort; find . -maxdepth 1 -type f | sort",
            "find src -name '*.py' -not -name 'main*' | sort; find . -path './src/*' -name '*.txt'",
            "find . \\( -name '*.md' -o -name '*.csv' -o -name 'n.txt' \\) | sort",
            "find src -mindepth 2 | sort; find . -iname 'readme*'; find . -empty | sort",
            "find src -name '*.py' -exec wc -l {} \\; | sort; find src -name '*.py' -exec echo {} + | wc -w",
            "find . -size +0 -name '*.txt' | sort; find src -type f -name '*.txt' -print",
            "find nosuch; echo $?; find src -name '*.py' -prune -o -type f -print | sort",
            "find src -printf '%f %d\\n' | sort; find . -regex '.*\\.py$' | sort",
            "find src -name 'deep*' -delete; find src | sort",
            "ls; ls src; ls -a src; ls -A src; ls -1 src; ls -R src; ls -d src; ls nosuch; echo $?",
            "ls -r; ls -S; ls src/*.py; ls -p src",
            "ls -l src | tail -n +2 | awk '{print $1, $2, $3, $4, $9}'",
            "ls -la src | awk '{print NF}' | sort -u",
            "mkdir -p a/b/c; ls -R a; rmdir a/b/c; ls a/b; rmdir a; echo $?",
            "mkdir x; mkdir x; echo $?; mkdir -p x/y/z; echo $?; touch f; mkdir -p f/g; echo $?",
            "cp t.txt u.txt; cmp t.txt u.txt && echo same; cp -r src dst; find dst | sort; cp src dst2; echo $?",
            "mv t.txt moved.txt; ls moved.txt; mv moved.txt src/; ls src; mv nosuch x; echo $?",
            "mkdir m; mv -T m m2; ls; touch a1; mv -fT a1 a2; ls a1 a2 2>&1; echo $?",
            "rm t.txt; ls t.txt; rm t.txt; echo $?; rm -f t.txt; echo $?; rm src; echo $?; rm -r src; ls src; echo $?",
            "rm -rf src/sub; find src | sort; touch -c newfile; ls newfile; echo $?",
            "dirname /a/b/c; dirname a; dirname /; dirname a/b/; basename /a/b/c.txt; basename /a/b/c.txt .txt; basename a/; basename -a x/y z/w",
            "realpath src/../src/main.py | sed 's#.*/src#SRC#'; realpath -m x/../y | xargs basename",
            "stat -c '%s %n' t.txt n.txt",
            "du -s src | cut -f2; du -a src | cut -f2 | sort",
            "diff t.txt t.txt; echo $?; diff n.txt dup.txt; echo $?; diff -q t.txt n.txt; echo $?",
            "seq 10 > a; seq 12 | sed 's/5/five/' > b; diff a b; diff -u a b | tail -n +3; echo $?",
            "printf 'x\\ny\\n' > p; printf 'x\\nz' > q; diff p q; diff -u p q | tail -n +3",
            "diff -r src src; echo $?; mkdir o; diff -r src o | sort; echo $?",
            "echo hello | base64; echo aGVsbG8K | base64 -d; printf 'x%.0s' $(seq 100) | base64 -w 20; base64 -w0 t.txt; echo",
            "echo abc | md5sum; md5sum t.txt n.txt; sha256sum t.txt; echo abc | sha256sum",
            "seq 5; seq 2 4; seq 1 2 9; seq 5 -1 1; seq -w 8 10; seq -s, 4; seq 0.5 0.5 2; seq 0",
            "date -d @0 '+%Y-%m-%d %H:%M:%S'; date -u -d '2024-02-29 13:04:05' '+%a %b %e %j %s'; date -d @86399 +%T",
            "echo a b c | xargs echo x; printf 'a\\nb\\n' | xargs -n1 echo; printf '1 2 3' | xargs -I{} echo '<{}>'; echo | xargs echo empty",
            "printf 'a\\0b\\0' | xargs -0 echo; find src -name '*.py' | sort | xargs wc -l",
            "printf 'f1\\nf2\\n' | xargs touch; ls f1 f2; echo 'x y' | xargs -n 1",
            "expr 3 + 4; expr 10 / 3; expr abc : 'a\\(.\\)'; expr length hello; expr 2 \\> 1",
            "which ls; which nosuch; echo $?",
            "env | grep -c '^HOME='; env FOO=bar sh -c 'echo $FOO'",
            "true; echo $?; false; echo $?; sleep 0; echo slept",
            "printf '%s\\n' a b c; printf '%d %5s|%-5s|%05.1f %x %o %e %%\\n' 42 r l 3.14159 255 8 1234.5",
            "printf '%b\\n' 'a\\tb'; printf 'no newline'; printf '\\n%c%c\\n' abc 9; printf '%s' ; echo",
            "printf '%d\\n' x; echo $?; printf '%.3s|%10.4f|%-+5d|\\n' abcdef 2.5 3",
            "echo -e '\\x41\\0102'; printf '\\x41\\102\\n'",
            "touch .a b; ls -a | head -3",
            "tar -cf a.tar src; tar -tf a.tar | sort; mkdir out; tar -xf a.tar -C out; find out | sort",
            "tar -cf b.tar -C src .; tar -tf b.tar | sort; tar -cvf c.tar README.md",
            "tar -cf d.tar --exclude='*.py' src; tar -tf d.tar | sort; tar -xf nosuch.tar; echo $?",
            "mkdir e; cd e; tar -xf ../nosuch.tar 2>/dev/null; echo $?",
        ],
    );
}

#[test]
fn what_agents_type() {
    all_same(
        TEXT,
        &[
            "find . -type f -name '*.py' | sort | head -20",
            "grep -rn 'def' --include='*.py' . | sort",
            "sed -n '1,3p' t.txt; cat -n t.txt | head -3; wc -l *.txt",
            "head -n 2 t.txt && echo '...' && tail -n 1 t.txt",
            "cat > new.py << 'EOF'\nimport sys\nprint(sys.argv)\nEOF\ncat new.py; wc -c new.py",
            "cat > c.txt <<EOF\nvalue=$((6*7))\nEOF\ncat c.txt",
            "for f in *.txt; do echo \"== $f\"; head -1 \"$f\"; done",
            "test -f t.txt && echo yes || echo no; [ -d src ] && ls src",
            "sort dup.txt | uniq -c | sort -rn | head -3",
            "cut -d' ' -f1 t.txt | sort -u",
            "printf 'x y\\n' | xargs -n1 -I{} sh -c 'echo item {}'",
            "printf '%-10s|%s\\n' a b; seq -f '%03g' 1 3",
            "printf 'a\\r\\nb\\r\\n' | tr -d '\\r' | od -c; printf 'hello\\0\\377' | od -An -tx1; od -tc n.txt | head -2",
            "seq 100 | od -x | head -3; printf 'abc' | od; printf '%.0sx' $(seq 40) | od -c; printf 'ab' | od -b -Ad",
            "printf 'hello world, this is xxd\\n' | xxd; echo hi | xxd -p; echo 6869 | xxd -r -p; echo; xxd -l 4 t.txt; xxd -c 8 -g 1 n.txt",
            "printf 'hello world\\n' | hexdump -C; seq 30 | hexdump -C | tail -2; printf '' | hexdump -C",
            "grep -c '' t.txt; ls *.py 2>/dev/null | wc -l; ls src/*.py | wc -l",
            "sed -i 's/alpha/ALPHA/g' t.txt && grep -c ALPHA t.txt",
            "nl -ba t.txt | sed -n '2,4p'",
            "grep -n 'def ' src/*.py",
            "cat t.txt | head -n 4 | tail -n 2",
            "find . -name '*.md' -delete; ls",
            "while IFS= read -r line; do echo \"[$line]\"; done < noeol.txt",
            "set -- $(echo a b c); echo $2; x=/a/b/c; echo ${x##*/}",
            "[ \"$(ls -A src)\" ] && echo notempty; [[ -z \"$(ls nosuchdir 2>/dev/null)\" ]] && echo empty",
            "export PATH=\"/opt/x:$PATH\"; echo ${PATH%%:*}",
            "command -v sed >/dev/null 2>&1 && echo has-sed; command -v jqq >/dev/null 2>&1 || echo no-jq",
            "stat -c %s t.txt; expr 1 + 1; ls -1 | wc -l",
            "echo 'key: value' | sed -E 's/^([^:]+): (.*)$/\\2=\\1/'",
            "awk 'NR>1' csv.txt | sort -t, -k2 -n | head -1",
            "grep -o '[0-9]\\+' csv.txt | paste -sd+ | sed 's/+/ + /g'",
            "ls src | while read f; do echo \"file: $f\"; done",
            "echo \"Lines: $(wc -l < t.txt)\"",
            "if grep -q alpha t.txt; then echo found; else echo missing; fi",
            "mkdir -p out && for i in 1 2 3; do echo $i > out/$i.txt; done && ls out && cat out/*.txt",
            "echo '{\"a\": 1}' > j.json && grep -o '\"a\": [0-9]*' j.json",
            "find src -type f | xargs grep -l 'def' | sort",
            "touch z && ls -t z t.txt | head -1",
            "echo $((10 * 3 / 4)) $(( (1 + 2) * 3 ))",
            "awk '{print toupper(substr($0,1,1)) substr($0,2)}' n.txt",
            "sed -e '/^$/d' -e 's/^/> /' t.txt",
            "tr '[:upper:]' '[:lower:]' < README.md | grep -c text",
            "cp -r src src2 && diff -r src src2 && echo identical",
            "rm -rf src2 && ls",
            "ls -la src | grep -c py",
            "tar -cf a.tar src && rm -rf src && tar -xf a.tar && find src -type f | sort",
        ],
    );
}
