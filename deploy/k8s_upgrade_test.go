package deploy

import (
	"strings"
	"testing"
)

// TestSetupJobIsNamedForItsRelease: a Job's pod template is immutable, so
// `kubectl apply -k` with a new image failed on the old setup Job (or, had
// it been deleted by its TTL, ran new code before any migration). The
// overlay names the Job after the release it runs, so each release's apply
// creates a Job of its own that migrates before the new pods, which refuse
// a schema behind them (pkg/startup), can start.
func TestSetupJobIsNamedForItsRelease(t *testing.T) {
	set := buildK8s(t, "k8s/overlays/example")
	if len(set.Jobs) != 1 {
		t.Fatalf("%d Jobs, want the one setup Job", len(set.Jobs))
	}
	for name, job := range set.Jobs {
		image := job.Spec.Template.Spec.Containers[0].Image
		_, tag, ok := strings.Cut(image, ":")
		if !ok {
			t.Fatalf("setup Job image %q has no tag: a release must pin one", image)
		}
		want := "flashsale-setup-" + strings.NewReplacer(".", "-", "_", "-").Replace(strings.ToLower(tag))
		if name != want {
			t.Errorf("setup Job %q runs %s: name it %q (the patch beside newTag in the overlay), so the release's apply makes a new Job", name, image, want)
		}
	}
}
