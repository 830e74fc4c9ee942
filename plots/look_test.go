package plots

import (
	"os"
	"testing"

	"github.com/linerate/linerate/plots/internal/fixture"
)

// TestLook renders the fixture campaign into $PLOTS_LOOK for eyes.
func TestLook(t *testing.T) {
	dir := os.Getenv("PLOTS_LOOK")
	if dir == "" {
		t.Skip("set PLOTS_LOOK=DIR to render the fixture campaign there")
	}
	os.RemoveAll(dir)
	if err := fixture.Write(dir); err != nil {
		t.Fatal(err)
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := Render(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d files", len(w.Files))
}
