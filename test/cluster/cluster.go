package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Tier selects which components a control plane runs.
type Tier int

const (
	// APITier runs etcd and kube-apiserver: enough for anything that only
	// depends on API semantics (RBAC, schema, subresources, selectors,
	// optimistic concurrency).
	APITier Tier = iota
	// FullTier adds kube-controller-manager, kube-scheduler and kwok with one
	// simulated node, so that Jobs complete, Deployments run, garbage is
	// collected and namespaces finalize.
	FullTier
)

func (t Tier) String() string {
	if t == FullTier {
		return "full"
	}
	return "api"
}

// ParseTier reads "api" or "full".
func ParseTier(s string) (Tier, error) {
	switch s {
	case "api":
		return APITier, nil
	case "full":
		return FullTier, nil
	}
	return 0, fmt.Errorf("unknown tier %q: want api or full", s)
}

// Names of the identities the control plane knows from its static token file.
// Each component has its own user so that the audit log attributes requests
// cleanly; the audit policy leaves the components' own requests out.
const (
	// AdminUser is the identity of Cluster.AdminConfig: a member of
	// system:masters.
	AdminUser         = "nsman:admin"
	controllerManager = "nsman:kube-controller-manager"
	scheduler         = "nsman:kube-scheduler"
	kwokUser          = "nsman:kwok"
)

// NodeName is the simulated node that the full tier schedules pods on.
const NodeName = "kwok-node-0"

// Cluster is a running control plane.
type Cluster struct {
	// Tier is what this control plane runs.
	Tier Tier
	// Dir holds the data, logs, audit log and kubeconfigs.
	Dir string
	// AdminConfig acts as AdminUser.
	AdminConfig *rest.Config
	// Kubeconfig is the path of a kubeconfig file for AdminConfig.
	Kubeconfig string
	// Admin is a clientset for AdminConfig.
	Admin kubernetes.Interface
	// StartupTime is how long Start took, until every component was ready.
	StartupTime time.Duration

	auditLog string
	ownDir   bool
	etcdURL  string

	mu    sync.Mutex
	procs []*process
}

// Options configure Start.
type Options struct {
	// Tier is the set of components to run.
	Tier Tier
	// MinKubernetes runs the kube-apiserver of the oldest Kubernetes nsman
	// supports (test/tools/kube-min) in place of the current one; with
	// APITier only.
	MinKubernetes bool
	// Dir is where the control plane keeps its state. Empty means a new
	// temporary directory, removed by Stop.
	Dir string
}

// Start runs a control plane on free loopback ports and returns once every
// component is ready. On error nothing is left running.
func Start(ctx context.Context, opts Options) (c *Cluster, err error) {
	began := time.Now()
	if opts.MinKubernetes && opts.Tier != APITier {
		return nil, errors.New("MinKubernetes runs a kube-apiserver alone: use APITier")
	}
	bins, err := findBinaries(opts.Tier, opts.MinKubernetes)
	if err != nil {
		return nil, err
	}
	c = &Cluster{Tier: opts.Tier, Dir: opts.Dir}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "nsman-cluster-"); err != nil {
			return nil, err
		}
		c.ownDir = true
	} else if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()

	if err := c.startAPITier(ctx, bins); err != nil {
		return nil, err
	}
	if opts.Tier == FullTier {
		if err := c.startFullTier(ctx, bins); err != nil {
			return nil, err
		}
	}
	c.StartupTime = time.Since(began)
	return c, nil
}

// Stop ends every component, newest first, and removes the state directory
// when Start created it. It is safe to call more than once.
func (c *Cluster) Stop() {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	c.mu.Unlock()
	// etcd (the first) goes last so that the others can shut down cleanly.
	if len(procs) > 1 {
		var wg sync.WaitGroup
		for _, p := range procs[1:] {
			wg.Go(func() { p.stop(5 * time.Second) })
		}
		wg.Wait()
	}
	if len(procs) > 0 {
		procs[0].stop(5 * time.Second)
	}
	if c.ownDir {
		_ = os.RemoveAll(c.Dir)
	}
}

// Pids returns the process ids of the running components.
func (c *Cluster) Pids() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := make([]int, 0, len(c.procs))
	for _, p := range c.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	return pids
}

func (c *Cluster) start(name, path string, args ...string) (*process, error) {
	p, err := startProcess(c.Dir, name, path, args...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// auditPolicy records every request at Metadata level except the control-plane
// components' own traffic, which no test asks about.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  users: ["` + controllerManager + `", "` + scheduler + `", "` + kwokUser + `", "system:apiserver"]
- level: None
  nonResourceURLs: ["/healthz*", "/livez*", "/readyz*"]
- level: Metadata
`

func (c *Cluster) startAPITier(ctx context.Context, bins binaries) error {
	etcdDir := filepath.Join(c.Dir, "etcd")
	clientPort, err := FreePort()
	if err != nil {
		return err
	}
	peerPort, err := FreePort()
	if err != nil {
		return err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	c.etcdURL = etcdURL
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	etcd, err := c.start("etcd", bins.etcd,
		"--name=default",
		"--data-dir="+etcdDir,
		"--listen-client-urls="+etcdURL,
		"--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return err
	}
	if err := waitHTTP(ctx, etcd, &http.Client{Timeout: time.Second}, etcdURL+"/health"); err != nil {
		return fmt.Errorf("etcd not ready: %w", err)
	}

	keys, err := writePKI(c.Dir)
	if err != nil {
		return err
	}
	tokens := map[string]string{}
	var tokenFile strings.Builder
	for i, user := range []string{AdminUser, controllerManager, scheduler, kwokUser} {
		tok, err := randomToken()
		if err != nil {
			return err
		}
		tokens[user] = tok
		fmt.Fprintf(&tokenFile, "%s,%s,%d,\"system:masters\"\n", tok, user, i+1)
	}
	tokenPath := filepath.Join(c.Dir, "tokens.csv")
	if err := os.WriteFile(tokenPath, []byte(tokenFile.String()), 0o600); err != nil {
		return err
	}
	policyPath := filepath.Join(c.Dir, "audit-policy.yaml")
	if err := os.WriteFile(policyPath, []byte(auditPolicy), 0o600); err != nil {
		return err
	}
	c.auditLog = filepath.Join(c.Dir, "audit.log")

	port, err := FreePort()
	if err != nil {
		return err
	}
	apiserver, err := c.start("kube-apiserver", bins.apiserver,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		"--tls-cert-file="+keys.servingCert,
		"--tls-private-key-file="+keys.servingKey,
		"--token-auth-file="+tokenPath,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+keys.serviceAccountKey,
		"--service-account-signing-key-file="+keys.serviceAccountKey,
		// A /16: the control plane of a package's tests is shared, and
		// without the namespace controller no Service it creates goes;
		// the long robustness tests make more than a /24's 254.
		"--service-cluster-ip-range=10.0.0.0/16",
		"--disable-admission-plugins=ServiceAccount",
		"--audit-policy-file="+policyPath,
		"--audit-log-path="+c.auditLog,
		"--audit-log-mode=blocking",
		"--audit-log-format=json",
		// Never rotated while the control plane runs: AuditedRequests reads
		// the whole log, and kube-apiserver would start a new file at 100 MB
		// (what a size of 0 means), which a benchmark at 10,000 managers
		// passes.
		"--audit-log-maxsize=1048576",
	)
	if err != nil {
		return err
	}

	host := "https://127.0.0.1:" + strconv.Itoa(port)
	c.AdminConfig = c.configFor(host, keys.caPEM, tokens[AdminUser])
	if c.Admin, err = kubernetes.NewForConfig(c.AdminConfig); err != nil {
		return err
	}
	if err := waitUntil(ctx, apiserver, func(ctx context.Context) (bool, error) {
		code := 0
		c.Admin.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
		return code == http.StatusOK, nil
	}); err != nil {
		return fmt.Errorf("kube-apiserver not ready: %w", err)
	}

	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	for user, tok := range tokens {
		path := c.Kubeconfig
		if user != AdminUser {
			path = filepath.Join(c.Dir, strings.TrimPrefix(user, "nsman:")+".kubeconfig")
		}
		if err := writeKubeconfig(path, host, keys.caPEM, tok); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) startFullTier(ctx context.Context, bins binaries) error {
	kubeconfig := func(user string) string {
		return filepath.Join(c.Dir, strings.TrimPrefix(user, "nsman:")+".kubeconfig")
	}
	kcmConfig := kubeconfig(controllerManager)
	kcmPort, err := FreePort()
	if err != nil {
		return err
	}
	kcm, err := c.start("kube-controller-manager", bins.controllerManager,
		"--kubeconfig="+kcmConfig,
		"--authentication-kubeconfig="+kcmConfig,
		"--authorization-kubeconfig="+kcmConfig,
		"--service-account-private-key-file="+filepath.Join(c.Dir, "service-account.key"),
		"--use-service-account-credentials=false",
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(kcmPort),
		"--cert-dir="+filepath.Join(c.Dir, "kube-controller-manager-certs"),
		"--controllers=*,-serviceaccount-token",
	)
	if err != nil {
		return err
	}
	schedConfig := kubeconfig(scheduler)
	schedPort, err := FreePort()
	if err != nil {
		return err
	}
	sched, err := c.start("kube-scheduler", bins.scheduler,
		"--kubeconfig="+schedConfig,
		"--authentication-kubeconfig="+schedConfig,
		"--authorization-kubeconfig="+schedConfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(schedPort),
		"--cert-dir="+filepath.Join(c.Dir, "kube-scheduler-certs"),
	)
	if err != nil {
		return err
	}
	kwok, err := c.start("kwok", bins.kwok,
		"--kubeconfig="+kubeconfig(kwokUser),
		"--config="+bins.kwokStages,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-lease-duration-seconds=40",
		"--server-address=127.0.0.1:0",
	)
	if err != nil {
		return err
	}

	// Self-signed serving certificates: only their health endpoints are read.
	insecure := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := waitHTTP(ctx, kcm, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort)); err != nil {
		return fmt.Errorf("kube-controller-manager not ready: %w", err)
	}
	if err := waitHTTP(ctx, sched, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", schedPort)); err != nil {
		return fmt.Errorf("kube-scheduler not ready: %w", err)
	}

	if _, err := c.Admin.CoreV1().Nodes().Create(ctx, fakeNode(), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create node: %w", err)
	}
	if err := waitUntil(ctx, kwok, func(ctx context.Context) (bool, error) {
		node, err := c.Admin.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, nil
			}
		}
		return false, nil
	}); err != nil {
		return fmt.Errorf("node %s not ready: %w", NodeName, err)
	}
	// The service account controller creates "default" in every namespace;
	// pods cannot be created before it has, so wait for it.
	if err := waitUntil(ctx, kcm, func(ctx context.Context) (bool, error) {
		_, err := c.Admin.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("kube-controller-manager not working: %w", err)
	}
	return nil
}

// fakeNode is the node kwok manages: big enough for any test's pods.
func fakeNode() *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("1000"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": NodeName},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
}

// configFor returns a client config for host that presents token.
func (c *Cluster) configFor(host string, caPEM []byte, token string) *rest.Config {
	return &rest.Config{
		Host:            host,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		QPS:             -1, // tests are not to be slowed by client-side throttling
	}
}

func writeKubeconfig(path, host string, caPEM []byte, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["nsman-test"] = &clientcmdapi.Cluster{Server: host, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["nsman-test"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["nsman-test"] = &clientcmdapi.Context{Cluster: "nsman-test", AuthInfo: "nsman-test"}
	cfg.CurrentContext = "nsman-test"
	return clientcmd.WriteToFile(*cfg, path)
}

func randomToken() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// FreePort asks the kernel for an unused loopback port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startupTimeout bounds how long any one component may take to be ready.
const startupTimeout = 2 * time.Minute

// waitUntil polls done until it holds, the component p exits, or the startup
// timeout passes.
func waitUntil(ctx context.Context, p *process, done func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, startupTimeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if p.exited() {
			return false, errExited
		}
		return done(ctx)
	})
	if errors.Is(err, errExited) {
		return p.failure()
	}
	if err != nil {
		return fmt.Errorf("%w; last lines of %s:\n%s", err, p.logPath, p.tail(20))
	}
	return nil
}

// waitHTTP waits until url answers 200.
func waitHTTP(ctx context.Context, p *process, client *http.Client, url string) error {
	return waitUntil(ctx, p, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}
