package tutorialtest

import (
	"bufio"
	"fmt"
	"strings"
)

// shellBlocks returns the bodies of the ```sh fenced blocks of a Markdown
// document, in order. An unterminated block is an error.
func shellBlocks(markdown string) ([]string, error) {
	var blocks []string
	var cur *strings.Builder
	sc := bufio.NewScanner(strings.NewReader(markdown))
	line := 0
	start := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(text) == "```sh":
			cur, start = &strings.Builder{}, line
		case cur != nil && strings.TrimSpace(text) == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(text)
			cur.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("the sh block opened on line %d is not closed", start)
	}
	return blocks, nil
}
