package tutorialtest

import (
	"reflect"
	"testing"
)

func TestShellBlocks(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{"none", "text\n    indented\n", nil, ""},
		{"two", "a\n```sh\nx\ny\n```\nb\n```text\nno\n```\n```sh\nz\n```\n", []string{"x\ny\n", "z\n"}, ""},
		{"other languages", "```bash\nno\n```\n```\nno\n```\n", nil, ""},
		{"unclosed", "a\n```sh\nx\n", nil, "the sh block opened on line 2 is not closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := shellBlocks(tt.in)
			if gotErr := errString(err); gotErr != tt.wantErr {
				t.Fatalf("shellBlocks error = %q; want %q", gotErr, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("shellBlocks = %q; want %q", got, tt.want)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
