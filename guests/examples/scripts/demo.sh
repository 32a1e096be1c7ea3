# A shell script in the shell guest: its utilities are built in, and
# python3 and node are the interpreter guests, over the same files.
mkdir -p data
printf 'pear 3\napple 5\nfig 1\n' > data/fruit.txt
sort -k2 -n -r data/fruit.txt | head -n 2
python3 -c 'import sys; print(sum(int(l.split()[1]) for l in open("data/fruit.txt")))'
echo 'console.log(require("fs").readdirSync("data"))' > list.js && node list.js
grep -c a data/fruit.txt
