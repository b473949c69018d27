package engine

import (
	"bytes"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bouncer-mcp/bouncer/internal/testsupport/need"
)

// topWords returns the words of command line s, as the lexer reads them
// at its top level, each with its glob text.
func topWords(s string) []string {
	l := &shellLexer{s: s}
	l.run(false)
	var out []string
	for _, t := range l.out {
		if !t.op {
			out = append(out, string(t.word.b))
		}
	}
	return out
}

// The lexer's words are a shell's, after quote removal.
func TestShellWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`cat ~/.boun''cer/remembered.json`, []string{"cat", "~/.bouncer/remembered.json"}},
		{`cat "$HOME"/.bouncer`, []string{"cat", "$HOME/.bouncer"}},
		{`cat \.bouncer`, []string{"cat", ".bouncer"}},
		{`cat "a b"'c d'e\ f`, []string{"cat", "a bc de f"}},
		{`echo "x\"y\\z\q"`, []string{"echo", `x"y\z\q`}},
		{"echo a\\\nb", []string{"echo", "ab"}},
		{`echo $'\x2ebouncer\t\101\u00e9'`, []string{"echo", ".bouncer\tA\u00e9"}},
		{`echo $"x y"`, []string{"echo", "x y"}},
		{`echo ${HOME}/x ${X:-/y} $1 $@ $`, []string{"echo", "${HOME}/x", "${X}", "$1", "$@", "$"}},
		{`echo $(cat x)/y "$(a "b c")"z`, []string{"echo", "${}/y", "${}z"}},
		{"echo `cat x`/y", []string{"echo", "${}/y"}},
		{`a;b&&c|d>e<f(g)`, []string{"a", "b", "c", "d", "e", "f", "g"}},
		{`echo 'unterminated`, []string{"echo", "unterminated"}},
		{`echo "unterminated`, []string{"echo", "unterminated"}},
		{`echo $((2 * (3 + 4)))x`, []string{"echo", "${}x"}},
		{`echo # not a comment`, []string{"echo", "#", "not", "a", "comment"}},
	} {
		if got := topWords(tc.in); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Command substitutions, backticks, ${...} operands and a word that holds
// a command line (sh -c '...') are read as command lines of their own.
func TestShellNested(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // a word among all the tokens
	}{
		{`echo $(cat ~/.boun''cer/key)`, "~/.bouncer/key"},
		{"echo `cat ~/.b\\\\ouncer`", "~/.bouncer"},
		{`echo "$(cat "$(echo ~/.boun''cer)")"`, "~/.bouncer"},
		{`echo ${X:-$(cat ~/.b''ouncer)}`, "~/.bouncer"},
		{`sh -c 'cat ~/.boun""cer/key'`, "~/.bouncer/key"},
		{`bash -c "eval 'cat ~/.b\"\"ouncer'"`, "~/.bouncer"},
	} {
		found := false
		for _, tok := range shellTokens(tc.in) {
			found = found || (!tok.op && string(tok.word.b) == tc.want)
		}
		if !found {
			t.Errorf("%q: no word %q among %q", tc.in, tc.want, tokenTexts(shellTokens(tc.in)))
		}
	}
}

func tokenTexts(toks []shellToken) []string {
	var out []string
	for _, t := range toks {
		if t.op {
			out = append(out, ";")
		} else {
			out = append(out, string(t.word.b))
		}
	}
	return out
}

// Unquoted wildcards are globs; quoted ones are plain; brace expansions
// expand as bash expands them.
func TestShellGlobs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string // the second word's expansions: glob texts, and "=" before a plain word
	}{
		{`ls *.txt`, []string{"*.txt"}},
		{`ls '*'.txt`, []string{"=*.txt"}},
		{`ls "[.]"b\?`, []string{"=[.]b?"}},
		{`ls "*"?`, []string{`\*?`}},
		{`ls [.]bouncer`, []string{"[.]bouncer"}},
		{`ls ~/.{x,bouncer}/k`, []string{"=~/.x/k", "=~/.bouncer/k"}},
		{`ls a{b,{c,d}e}f`, []string{"=abf", "=acef", "=adef"}},
		{`ls x{1..3}`, []string{"=x1", "=x2", "=x3"}},
		{`ls x{c..a}`, []string{"=xc", "=xb", "=xa"}},
		{`ls x{a}y`, []string{"=x{a}y"}},
		{`ls '{a,b}'`, []string{"={a,b}"}},
		{`ls ${a,b}`, []string{"=${a}"}},
	} {
		ws, ok := braceExpand(shellTokens(tc.in)[1].word)
		if !ok {
			t.Fatalf("%q: too many words", tc.in)
		}
		var got []string
		for _, w := range ws {
			g, glob := globText(w)
			if !glob {
				g = "=" + g
			}
			got = append(got, g)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
	if _, ok := braceExpand(topShellWord(`{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}`)); ok {
		t.Error("512 words from one brace expansion were made")
	}
	if _, ok := braceExpand(topShellWord(`x{1..100000}`)); ok {
		t.Error("a sequence of 100000 words was made")
	}
}

func topShellWord(s string) shellWord {
	l := &shellLexer{s: s}
	l.run(false)
	return l.out[0].word
}

// Code's string literals, joined where code joins them.
func TestCodeStrings(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // among the strings
	}{
		{`open('/ho'+'me/u')`, "/home/u"},
		{`open("~/.boun" "cer")`, "~/.bouncer"},
		{`p = '/x/' + "\x2ebouncer"`, "/x/.bouncer"},
		{"f(`/home/${u}/.bouncer`)", "/home/${}/.bouncer"},
		{`os.path.join('~', '.bouncer')`, "~/.bouncer"},
		{`s = """a'b"c"""`, `a'b"c`},
		{`x = 'unterminated`, "unterminated"},
	} {
		got := codeStrings(tc.in)
		found := false
		for _, g := range got {
			found = found || g == tc.want
		}
		if !found {
			t.Errorf("%q: no %q among %q", tc.in, tc.want, got)
		}
	}
}

// A glob matches a name as a shell matches it, ignoring case.
func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pat, name string
		want      bool
	}{
		{"*", ".bouncer", true},
		{".b*r", ".bouncer", true},
		{"hom?", "home", true},
		{"hom?", "homes", false},
		{"[.]bouncer", ".bouncer", true},
		{"[!x]bouncer", ".bouncer", true},
		{"[^.]bouncer", ".bouncer", false},
		{"[a-z]*", "bouncer.yaml", true},
		{"[A-Z]*", "bouncer.yaml", true},
		{"[[:alpha:]]ouncer.yaml", "bouncer.yaml", true},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{"*.txt", "bouncer.yaml", false},
		{"[", "[", true},
		{"a[", "a[", true},
		{"*a*b*c", "xaybzc", true},
		{"*a*b*c", "xaybz", false},
	} {
		if got := globMatch(tc.pat, tc.name); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pat, tc.name, got, tc.want)
		}
	}
}

// shellCorpus are command lines whose words a real shell must read as the
// lexer does. Quoting only: with set -f (and, for bash, set +B) a shell
// neither globs nor brace-expands, so the words are its lexing alone.
var shellCorpus = []string{
	`a b c`,
	`~/.boun''cer/remembered.json`,
	`"~/.bouncer" '~'/x \~/y`,
	`\.bouncer a\ b \\ \' \"`,
	`"a\"b" "a\\b" "a\b" "a\$b" 'a\b'`,
	`'it'\''s' "x"'y'z`,
	"a\\\nb",
	`*.txt '*' "?" [.]bouncer "[.]"x`,
	`{a,b} x{1..3}y`,
	`-o/x --output=/y a=b`,
	`""  ''  x`,
	`a	b   c`,
	`.b*r hom? [!x]y`,
}

// bashCorpus are more: what bash reads and dash does not.
var bashCorpus = []string{
	`$'\x2ebouncer' $'a\tb' $'\101\102' $'\u00e9' $'it\'s'`,
	`$"x y" a$'\n'b`,
}

// The lexer reads words as dash and bash do.
func TestShellWordsAgreeWithShells(t *testing.T) {
	bash := need.Program(t, "bash", "install bash")
	dash := need.Program(t, "dash", "install dash")
	for _, s := range shellCorpus {
		want := topWords(s)
		for _, sh := range []string{dash, bash} {
			got, ok := shellSplit(t, sh, s)
			if !ok {
				t.Errorf("%s refused %q", sh, s)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%q: %s reads %q, the lexer %q", s, sh, got, want)
			}
		}
	}
	for _, s := range bashCorpus {
		got, ok := shellSplit(t, bash, s)
		if want := topWords(s); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: bash reads %q (ok %v), the lexer %q", s, got, ok, want)
		}
	}
}

// shellSplit runs printf in shell sh over the words of s and returns them;
// ok is false when the shell refuses s. HOME is "~", so that a tilde a
// shell expands reads as the lexer keeps it.
func shellSplit(t testing.TB, sh, s string) ([]string, bool) {
	t.Helper()
	script := "set -f; "
	if strings.HasSuffix(sh, "bash") {
		script += "set +B; "
	}
	script += "printf '%s\\0' X " + s
	cmd := exec.Command(sh, "-c", script)
	cmd.Env = []string{"HOME=~", "PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8"}
	cmd.WaitDelay = time.Second
	out, err := cmd.Output()
	if err != nil {
		return nil, false
	}
	words := strings.Split(string(out), "\x00")
	if len(words) < 2 || words[0] != "X" {
		return nil, false
	}
	return words[1 : len(words)-1], true
}

// FuzzShellWords feeds the lexer, brace expansion, the code reader and the
// glob matcher untrusted text: none may panic or hang, and on text made of
// the bytes that only quote and split (no $, `, operators or newlines,
// which would run something), bash must read the words the lexer reads.
func FuzzShellWords(f *testing.F) {
	for _, s := range append(append([]string(nil), shellCorpus...), bashCorpus...) {
		f.Add(s)
	}
	for _, s := range []string{`echo $(a "$(b)")`, "a`b`c", `${x:-$(y)}`, `{a,{b,c}}{1..9}`, `[[:alpha:]`, `'ho'+'me'`, `"""x"""`} {
		f.Add(s)
	}
	bash, err := exec.LookPath("bash")
	f.Fuzz(func(t *testing.T, s string) {
		toks := shellTokens(s)
		for _, tok := range toks {
			if tok.op {
				continue
			}
			if len(tok.word.b) != len(tok.word.q) {
				t.Fatalf("%q: a word's bytes and quote marks differ in length", s)
			}
			if forms := wordForms(tok.word); forms != nil {
				for _, w := range forms {
					g, _ := globText(w)
					p := compilePattern(g)
					for _, c := range p.comps {
						c.matches(".bouncer")
					}
				}
			}
		}
		codeStrings(s)
		if err != nil || !utf8.ValidString(s) || len(s) > 200 || strings.ContainsAny(s, "$`;&|<>()\n\r#\x00") || strings.Contains(s, "~") {
			return
		}
		got, ok := shellSplit(t, bash, s)
		if !ok {
			return
		}
		if want := topWords(s); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("%q: bash reads %q, the lexer %q", s, got, want)
		}
	})
}

// The words of a command line are judged once each: a long one costs
// linear time.
func BenchmarkShellTokens(b *testing.B) {
	s := strings.Repeat(`cd "$D" && cat ~/.x/'y'*.txt | grep -E 'a.*b' ; `, 200)
	var buf bytes.Buffer
	buf.WriteString(s)
	for b.Loop() {
		shellTokens(buf.String())
	}
}
