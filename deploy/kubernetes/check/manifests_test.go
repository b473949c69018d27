// Package check decodes deploy/kubernetes's manifests strictly, as the
// Kubernetes API types define them, and asserts their security settings.
// It is a module of its own so that the Kubernetes libraries stay out of
// bouncer's: run it with `go test` in this directory.
package check

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// docs returns the YAML documents of the manifests, by kind.
func docs(t *testing.T) map[string][][]byte {
	files, err := filepath.Glob("../*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("manifests: %v %v", files, err)
	}
	out := map[string][][]byte{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range bytes.Split(data, []byte("\n---\n")) {
			var head struct{ Kind string }
			if err := yaml.Unmarshal(d, &head); err != nil || head.Kind == "" {
				t.Fatalf("%s: a document without a kind: %v", f, err)
			}
			out[head.Kind] = append(out[head.Kind], d)
		}
	}
	return out
}

// strict decodes a document into v, refusing unknown or duplicate fields.
func strict(t *testing.T, d []byte, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(d, v); err != nil {
		t.Fatalf("%v\n%s", err, d)
	}
}

func TestStatefulSet(t *testing.T) {
	all := docs(t)
	if len(all["StatefulSet"]) != 1 {
		t.Fatalf("want one StatefulSet, got %d", len(all["StatefulSet"]))
	}
	var ss appsv1.StatefulSet
	strict(t, all["StatefulSet"][0], &ss)
	pod := ss.Spec.Template.Spec
	if ss.Spec.ServiceName == "" || ss.Spec.Replicas == nil || *ss.Spec.Replicas < 2 {
		t.Errorf("serviceName %q, replicas %v: want a headless service and at least two replicas", ss.Spec.ServiceName, ss.Spec.Replicas)
	}
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Error("the pod must run as a non-root user")
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("the pod must use the runtime's default seccomp profile")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod must not mount a service account token")
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("no host namespaces")
	}
	if len(pod.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(pod.Containers))
	}
	c := pod.Containers[0]
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Fatal("the container has no securityContext")
	case sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem:
		t.Error("the root filesystem must be read-only")
	case sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation:
		t.Error("privilege escalation must be off")
	case sc.Privileged != nil && *sc.Privileged:
		t.Error("not privileged")
	case sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0:
		t.Error("all capabilities dropped, none added")
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/livez" {
		t.Error("the liveness probe is GET /livez")
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error("the readiness probe is GET /readyz")
	}
	if !slices.Contains(c.Args, "listen") {
		t.Errorf("args %v: the container runs bouncer listen", c.Args)
	}
	if ss.Spec.Template.Spec.TerminationGracePeriodSeconds == nil || *ss.Spec.Template.Spec.TerminationGracePeriodSeconds <= 30 {
		t.Error("the grace period must exceed the drain timeout (30 s)")
	}
	// The state (audit log, codes) is on a volume of each replica's own.
	if len(ss.Spec.VolumeClaimTemplates) != 1 {
		t.Error("want a volume claim template for the state directory")
	}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			t.Errorf("volume %s is a hostPath", v.Name)
		}
		if v.Secret != nil && (v.Secret.DefaultMode == nil || *v.Secret.DefaultMode&0o007 != 0) {
			t.Errorf("secret volume %s: others may read it", v.Name)
		}
	}
}

func TestServicesAndNetworkPolicy(t *testing.T) {
	all := docs(t)
	headless := false
	for _, d := range all["Service"] {
		var s corev1.Service
		strict(t, d, &s)
		if s.Spec.ClusterIP == corev1.ClusterIPNone {
			headless = true
		}
	}
	if !headless {
		t.Error("want a headless service naming each replica")
	}
	if len(all["NetworkPolicy"]) != 1 {
		t.Fatal("want one NetworkPolicy")
	}
	var np networkingv1.NetworkPolicy
	strict(t, all["NetworkPolicy"][0], &np)
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Error("the policy must govern egress and ingress")
	}
	for _, e := range np.Spec.Egress {
		if len(e.To) == 0 {
			t.Error("an egress rule with no destination allows everywhere")
		}
		for _, p := range e.To {
			if p.IPBlock != nil && (p.IPBlock.CIDR == "0.0.0.0/0" || p.IPBlock.CIDR == "::/0") {
				t.Error("egress to everywhere")
			}
		}
	}
	var cm corev1.ConfigMap
	strict(t, all["ConfigMap"][0], &cm)
	if !strings.Contains(cm.Data["mcp.json"], `"x-bouncer-listen"`) {
		t.Error("the ConfigMap's mcp.json configures the listener")
	}
}
