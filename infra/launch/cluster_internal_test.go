package launch

import "testing"

func TestSplitCPUs(t *testing.T) {
	parts, err := splitCPUs("0-6", 3)
	if err != nil || len(parts) != 3 || parts[0].String() != "0-2" || parts[1].String() != "3-4" || parts[2].String() != "5-6" {
		t.Fatalf("split 0-6 in 3: %v %v", parts, err)
	}
	if parts, err := splitCPUs("", 3); parts != nil || err != nil {
		t.Fatalf("unpinned: %v %v", parts, err)
	}
	if _, err := splitCPUs("0-1", 3); err == nil {
		t.Fatal("3 nodes on 2 CPUs accepted")
	}
}
