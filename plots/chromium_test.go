package plots

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// cdp is a minimal Chrome DevTools Protocol client over
// --remote-debugging-pipe: JSON messages separated by NUL, commands on
// the browser's fd 3, replies and events from its fd 4.
type cdp struct {
	w      *os.File
	mu     sync.Mutex
	nextID int
	wait   map[int]chan cdpMsg
	events chan cdpMsg
	done   chan struct{}
}

type cdpMsg struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

func newCDP(w, r *os.File) *cdp {
	c := &cdp{w: w, wait: map[int]chan cdpMsg{}, events: make(chan cdpMsg, 4096), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		br := bufio.NewReaderSize(r, 1<<20)
		for {
			b, err := br.ReadBytes(0)
			if err != nil {
				return
			}
			var m cdpMsg
			if json.Unmarshal(b[:len(b)-1], &m) != nil {
				continue
			}
			if m.ID != 0 {
				c.mu.Lock()
				ch := c.wait[m.ID]
				delete(c.wait, m.ID)
				c.mu.Unlock()
				if ch != nil {
					ch <- m
				}
				continue
			}
			select {
			case c.events <- m:
			default: // a flood of events we do not read; never block the reader
			}
		}
	}()
	return c
}

func (c *cdp) call(ctx context.Context, session, method string, params any, out any) error {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan cdpMsg, 1)
	c.wait[id] = ch
	c.mu.Unlock()
	p, _ := json.Marshal(params)
	msg, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": json.RawMessage(p), "sessionId": session})
	if session == "" {
		msg, _ = json.Marshal(map[string]any{"id": id, "method": method, "params": json.RawMessage(p)})
	}
	if _, err := c.w.Write(append(msg, 0)); err != nil {
		return fmt.Errorf("cdp %s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("cdp %s: %s", method, m.Error.Message)
		}
		if out != nil {
			return json.Unmarshal(m.Result, out)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("cdp %s: %w", method, ctx.Err())
	case <-c.done:
		return fmt.Errorf("cdp %s: the browser closed the pipe", method)
	}
}

// TestReportInChromium opens the fixture's report in headless Chromium
// (Debian's package, installed by .ci/setup): it must load with no console
// errors and no network request, every chart image must decode with a
// non-zero natural size, and a screenshot is taken.
func TestReportInChromium(t *testing.T) {
	html := fixtureReport(t)
	tmp := t.TempDir()
	page := filepath.Join(tmp, "report.html")
	if err := os.WriteFile(page, html, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, s := browser(t, ctx, 1280, 1600, 1)
	var problems []string
	watch := func(m cdpMsg) {
		switch m.Method {
		case "Runtime.exceptionThrown":
			problems = append(problems, "exception: "+string(m.Params))
		case "Runtime.consoleAPICalled":
			var p struct{ Type string }
			_ = json.Unmarshal(m.Params, &p)
			if p.Type == "error" || p.Type == "assert" || p.Type == "warning" {
				problems = append(problems, "console "+p.Type+": "+string(m.Params))
			}
		case "Log.entryAdded":
			var p struct {
				Entry struct{ Level, Text, URL string }
			}
			_ = json.Unmarshal(m.Params, &p)
			if p.Entry.Level == "error" {
				problems = append(problems, "log error: "+p.Entry.Text+" "+p.Entry.URL)
			}
		case "Network.requestWillBeSent":
			var p struct{ Request struct{ URL string } }
			_ = json.Unmarshal(m.Params, &p)
			if u := p.Request.URL; !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") && u != "about:blank" {
				problems = append(problems, "network request: "+u)
			}
		}
	}
	open(t, ctx, c, s, page, watch)

	// Open every <details> so every chart is laid out, then wait for each
	// image to decode; report each image's natural size.
	const probe = `(async () => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const imgs = Array.from(document.images);
  const out = await Promise.all(imgs.map(async i => {
    let ok = true;
    try { await i.decode(); } catch (e) { ok = false; }
    return {id: i.closest('figure') ? i.closest('figure').id : '', ok, w: i.naturalWidth, h: i.naturalHeight};
  }));
  return JSON.stringify({images: out, title: document.title, tables: document.querySelectorAll('table').length});
})()`
	var ev struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := c.call(ctx, s, "Runtime.evaluate", map[string]any{"expression": probe, "awaitPromise": true, "returnByValue": true}, &ev); err != nil {
		t.Fatal(err)
	}
	if len(ev.ExceptionDetails) > 0 {
		t.Fatalf("probe threw: %s", ev.ExceptionDetails)
	}
	var got struct {
		Images []struct {
			ID   string
			OK   bool
			W, H int
		}
		Title  string
		Tables int
	}
	if err := json.Unmarshal([]byte(ev.Result.Value), &got); err != nil {
		t.Fatalf("probe result %q: %v", ev.Result.Value, err)
	}
	c2 := load(t, fixtureRun(t))
	if want := len(Charts(c2)); len(got.Images) != want {
		t.Errorf("%d images in the page, want %d (one per chart)", len(got.Images), want)
	}
	for _, im := range got.Images {
		if !im.OK || im.W == 0 || im.H == 0 {
			t.Errorf("image %s: decoded %v, natural size %dx%d", im.ID, im.OK, im.W, im.H)
		}
	}
	if got.Title != "linerate report: fixture" || got.Tables < 4 {
		t.Errorf("title %q, %d tables", got.Title, got.Tables)
	}

	img := screenshot(t, ctx, c, s)
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	if err != nil || cfg.Width != 1280 || cfg.Height != 1600 {
		t.Errorf("screenshot: %v, %dx%d, want 1280x1600", err, cfg.Width, cfg.Height)
	}
	shotPath := filepath.Join(tmp, "report.png")
	if *look != "" {
		shotPath = filepath.Join(*look, "report-screenshot.png")
	}
	if err := os.WriteFile(shotPath, img, 0o644); err != nil {
		t.Fatal(err)
	}

	// Events that arrived after the load (late console errors).
	for drained := false; !drained; {
		select {
		case m := <-c.events:
			watch(m)
		case <-time.After(300 * time.Millisecond):
			drained = true
		}
	}
	for _, p := range problems {
		t.Errorf("%s", tail(p, 400))
	}
	_ = c.call(ctx, "", "Browser.close", map[string]any{}, nil)
}

// browser starts headless Chromium with a DevTools pipe and one page
// session with Runtime, Log, Page and Network enabled. It is stopped when
// the test ends.
func browser(t *testing.T, ctx context.Context, width, height int, scale float64) (*cdp, string) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium is not installed; .ci/setup installs Debian's chromium package: %v", err)
		}
		t.Skip("chromium not installed (make setup installs it); in CI this test fails instead")
	}
	tmp := t.TempDir()
	// fd 3: the browser reads our commands; fd 4: it writes to us.
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--user-data-dir="+filepath.Join(tmp, "profile"),
		"--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	outW.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmdW.Close() // the browser exits when its pipe closes
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		outR.Close()
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", tail(stderr.String(), 3000))
		}
	})
	c := newCDP(cmdW, outR)
	var created struct{ TargetID string }
	if err := c.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created); err != nil {
		t.Fatal(err)
	}
	var attached struct{ SessionID string }
	if err := c.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached); err != nil {
		t.Fatal(err)
	}
	s := attached.SessionID
	for _, m := range []string{"Runtime.enable", "Log.enable", "Page.enable", "Network.enable"} {
		if err := c.call(ctx, s, m, map[string]any{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.call(ctx, s, "Emulation.setDeviceMetricsOverride", map[string]any{"width": width, "height": height, "deviceScaleFactor": scale, "mobile": false}, nil); err != nil {
		t.Fatal(err)
	}
	return c, s
}

// open navigates to a file and waits for its load event, passing every
// event to watch.
func open(t *testing.T, ctx context.Context, c *cdp, s, path string, watch func(cdpMsg)) {
	t.Helper()
	url := "file://" + path
	var nav struct{ ErrorText string }
	if err := c.call(ctx, s, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		t.Fatal(err)
	}
	if nav.ErrorText != "" {
		t.Fatalf("navigate %s: %s", url, nav.ErrorText)
	}
	for {
		select {
		case m := <-c.events:
			if watch != nil {
				watch(m)
			}
			if m.Method == "Page.loadEventFired" {
				return
			}
		case <-ctx.Done():
			t.Fatalf("%s did not load: %v", url, ctx.Err())
		}
	}
}

func screenshot(t *testing.T, ctx context.Context, c *cdp, s string) []byte {
	t.Helper()
	var shot struct{ Data string }
	if err := c.call(ctx, s, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot); err != nil {
		t.Fatal(err)
	}
	img, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// TestSVGRendersLikePNG renders a chart's SVG in Chromium at the PNG's
// pixel size and compares it with our PNG. The SVG's font family is
// renamed first, so the only way to get Liberation's glyphs is the font
// embedded in the file; a control with the embedded font removed (the
// browser falls back to another font) must compare clearly worse.
func TestSVGRendersLikePNG(t *testing.T) {
	c := load(t, fixtureRun(t))
	var ch *Chart
	for _, x := range Charts(c) {
		if x.Name == "GET-p99" {
			ch = x
		}
	}
	if ch == nil {
		t.Fatal("no GET-p99 chart")
	}
	pngBytes, err := Draw(ch, FormatPNG)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := Draw(ch, FormatSVG)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cssW, cssH := int(ch.Width*96+0.5), int(ch.Height*96+0.5)
	b, s := browser(t, ctx, cssW, cssH, PNGDPI/96.0)
	want, err := png.Decode(bytes.NewReader(pngBytes))
	if err != nil {
		t.Fatal(err)
	}
	doc := strings.ReplaceAll(string(svg), "Liberation Sans", "LinerateEmbedded")
	face := regexp.MustCompile(`(?s)@font-face\{.*?\}`)
	if !face.MatchString(doc) {
		t.Fatal("the SVG has no @font-face")
	}
	variants := []struct {
		name string
		doc  string
	}{
		{"embedded", doc},
		{"control without the embedded font", face.ReplaceAllString(doc, "")},
	}
	scores := map[string]float64{}
	for _, v := range variants {
		p := filepath.Join(t.TempDir(), "chart.svg")
		if err := os.WriteFile(p, []byte(v.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		open(t, ctx, b, s, p, nil)
		shot := screenshot(t, ctx, b, s)
		got, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatal(err)
		}
		if got.Bounds() != want.Bounds() {
			t.Fatalf("%s: Chromium drew %v, our PNG is %v", v.name, got.Bounds(), want.Bounds())
		}
		scores[v.name] = inkMismatch(want, got)
		if *look != "" {
			os.WriteFile(filepath.Join(*look, "svg-in-chromium-"+strings.Fields(v.name)[0]+".png"), shot, 0o644)
		}
	}
	t.Logf("ink mismatch: embedded %.3f, control %.3f", scores["embedded"], scores["control without the embedded font"])
	if scores["embedded"] > 0.03 {
		t.Errorf("the SVG in Chromium differs from the PNG: %.1f%% of ink unmatched (limit 3%%)", scores["embedded"]*100)
	}
	if scores["control without the embedded font"] < 2*scores["embedded"] {
		t.Errorf("the comparison cannot tell a fallback font from the embedded one (control %.3f, embedded %.3f)",
			scores["control without the embedded font"], scores["embedded"])
	}
}

// inkMismatch is the share of dark pixels in either image with no dark
// pixel within one pixel in the other: rasterisers differ in anti-aliasing
// by a pixel, but a different font moves whole glyphs.
func inkMismatch(a, b image.Image) float64 {
	r := a.Bounds()
	ink := func(img image.Image, x, y int) bool {
		if !(image.Point{x, y}.In(r)) {
			return false
		}
		cr, cg, cb, _ := img.At(x, y).RGBA()
		return (cr*299+cg*587+cb*114)/1000 < 0x9000
	}
	near := func(img image.Image, x, y int) bool {
		for dy := -1; dy <= 1; dy++ {
			for dx := -1; dx <= 1; dx++ {
				if ink(img, x+dx, y+dy) {
					return true
				}
			}
		}
		return false
	}
	var total, bad int
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			ia, ib := ink(a, x, y), ink(b, x, y)
			if ia {
				total++
				if !near(b, x, y) {
					bad++
				}
			}
			if ib {
				total++
				if !near(a, x, y) {
					bad++
				}
			}
		}
	}
	if total == 0 {
		return 1
	}
	return float64(bad) / float64(total)
}
