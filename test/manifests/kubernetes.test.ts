import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";

/**
 * What the Kubernetes manifests promise about isolation, checked on what kustomize renders for
 * each overlay: the Ingress publishes the pages and webhooks but not /metrics, /readyz or /healthz; the
 * workers, which run agent code, mount no secret of the API's and sit behind a NetworkPolicy; and only
 * their namespace is Pod Security `privileged`. kustomize is $DISPATCH_KUSTOMIZE, the one
 * scripts/validate-manifests installs in its cache, or one on PATH; without any the file is skipped with a
 * notice (scripts/validate-manifests, part of scripts/test, runs it with its own).
 */
const MANIFESTS = fileURLToPath(new URL("../../manifests/kubernetes/", import.meta.url));
const kustomize = findKustomize();
if (!kustomize) {
  console.warn("Kubernetes manifest tests SKIPPED: no kustomize (run scripts/validate-manifests once)");
}

/** What only the API uses: never in a worker's environment. */
const API_ONLY_VARIABLES = [
  "DISPATCH_ADMIN_API_KEY",
  "DISPATCH_SIGNING_KEY",
  "DISPATCH_RUN_SERVICE_API_KEY",
  "SLACK_BOT_TOKEN",
  "SLACK_SIGNING_SECRET",
  "SLACK_APP_TOKEN",
  "GITHUB_WEBHOOK_SECRET",
];
const WORKER_SECRETS = ["dispatch-database", "dispatch-worker-secrets"];
const PRIVATE_IPV4 = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10"];
const POD_KINDS = new Set(["Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod"]);

/** Rendered Kubernetes fields below the top level, read as JSON (asserted field by field). */
// biome-ignore lint/suspicious/noExplicitAny: see above
type Rendered = any;
type K8sObject = {
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Rendered;
  data?: Record<string, string>;
};

describe.skipIf(!kustomize).each(["demo", "production"])("overlays/%s", (overlay) => {
  let objects: K8sObject[];
  beforeAll(() => {
    const rendered = execFileSync(kustomize!, ["build", join(MANIFESTS, "overlays", overlay)], {
      encoding: "utf8",
    });
    objects = parseAllDocuments(rendered).map((doc) => doc.toJS() as K8sObject);
  });
  const find = (kind: string, name: string) => {
    const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
    if (!found) throw new Error(`no ${kind} ${name} rendered`);
    return found;
  };

  it("the Ingress routes the pages and webhooks, and neither /metrics, /readyz nor /healthz", () => {
    const ingresses = objects.filter((o) => o.kind === "Ingress");
    expect(ingresses).not.toHaveLength(0);
    const routed = (path: string) => ingresses.some((ingress) => routes(ingress, path));
    for (const path of [
      "/",
      "/api/v1/agent/runs",
      "/slack/events",
      "/github/webhooks",
      "/sessions/abc",
      "/runs/abc",
      "/dashboard/events",
      "/login/github",
      "/logout",
    ]) {
      expect(routed(path), path).toBe(true);
    }
    for (const path of ["/metrics", "/readyz", "/healthz"]) expect(routed(path), path).toBe(false);
  });

  it("workers mount only the database and worker secrets: nothing of the API's signing secrets", () => {
    const worker = find("Deployment", "dispatch-worker");
    const secrets = secretsOf(worker.spec.template.spec);
    expect(secrets.length).toBeGreaterThan(0);
    for (const name of secrets) expect(WORKER_SECRETS, name).toContain(withoutHash(name));
    for (const name of variablesOf(worker.spec.template.spec)) expect(API_ONLY_VARIABLES).not.toContain(name);
    // A Secret rendered here (the demo's) that a worker mounts holds none of them either.
    for (const secret of objects.filter((o) => o.kind === "Secret" && secrets.includes(o.metadata.name))) {
      if (secret.metadata.namespace !== worker.metadata.namespace) continue;
      for (const key of Object.keys(secret.data ?? {})) expect(API_ONLY_VARIABLES).not.toContain(key);
    }
    // The API still gets them (the split is not a loss).
    const api = find("Deployment", "dispatch-api");
    expect(secretsOf(api.spec.template.spec).map(withoutHash)).toContain("dispatch-secrets");
  });

  it("a NetworkPolicy isolates the workers: nothing in; out to DNS, the public internet and the database", () => {
    const worker = find("Deployment", "dispatch-worker");
    const podLabels = worker.spec.template.metadata.labels as Record<string, string>;
    const policies = objects.filter(
      (o) =>
        o.kind === "NetworkPolicy" &&
        o.metadata.namespace === worker.metadata.namespace &&
        Object.entries(o.spec.podSelector?.matchLabels ?? {}).every(([k, v]) => podLabels[k] === v),
    );
    expect(policies).toHaveLength(1);
    const [policy] = policies;
    expect(policy!.spec.policyTypes).toEqual(expect.arrayContaining(["Ingress", "Egress"]));
    expect(policy!.spec.ingress ?? []).toEqual([]);
    const egress = policy!.spec.egress as Rendered[];
    // A rule without `to` would allow every destination.
    for (const rule of egress) expect(rule.to?.length, JSON.stringify(rule)).toBeGreaterThan(0);
    const ports = (rule: { ports?: Array<{ port: number }> }) => (rule.ports ?? []).map((p) => p.port);
    const dns = egress.find((rule) => ports(rule).includes(53));
    expect(dns.to).toEqual([
      { namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "kube-system" } } },
    ]);
    const block = (rule: Rendered, cidr: string) =>
      rule.to.find((peer: Rendered) => peer.ipBlock?.cidr === cidr);
    const internet = egress.find((rule) => block(rule, "0.0.0.0/0"));
    expect(block(internet, "0.0.0.0/0").ipBlock.except).toEqual(expect.arrayContaining(PRIVATE_IPV4));
    expect(block(internet, "::/0").ipBlock.except).toEqual(expect.arrayContaining(["fc00::/7", "fe80::/10"]));
    const database = egress.find((rule) => ports(rule).includes(5432));
    expect(database, "an egress rule to the database").toBeDefined();
    expect(ports(database)).toEqual([5432]);
    // Every other rule is one of these three.
    expect(egress.filter((rule) => ![dns, internet, database].includes(rule))).toEqual([]);
  });

  it("only the workers' namespace is privileged, and nothing but the workers runs in it", () => {
    const level = (namespace: string | undefined) =>
      find("Namespace", namespace ?? "").metadata.labels?.["pod-security.kubernetes.io/enforce"];
    const worker = find("Deployment", "dispatch-worker");
    expect(level(worker.metadata.namespace)).toBe("privileged");
    expect(level(find("Deployment", "dispatch-api").metadata.namespace)).toBe("restricted");
    for (const ns of objects.filter((o) => o.kind === "Namespace")) {
      if (ns.metadata.name !== worker.metadata.namespace) {
        expect(ns.metadata.labels?.["pod-security.kubernetes.io/enforce"], ns.metadata.name).toMatch(
          /^(restricted|baseline)$/,
        );
      }
    }
    const inWorkerNamespace = objects.filter(
      (o) => POD_KINDS.has(o.kind) && o.metadata.namespace === worker.metadata.namespace,
    );
    expect(inWorkerNamespace.map((o) => o.metadata.name)).toEqual(["dispatch-worker"]);
  });
});

/** Whether the Ingress sends a request for `path` to a backend (Exact, Prefix by path elements). */
function routes(ingress: K8sObject, path: string): boolean {
  return (ingress.spec.rules ?? []).some((rule: Rendered) =>
    (rule.http?.paths ?? []).some(({ path: p = "/", pathType }: { path?: string; pathType: string }) => {
      if (pathType === "Exact") return path === p;
      const prefix = p.replace(/\/+$/, "");
      return prefix === "" || path === prefix || path.startsWith(`${prefix}/`);
    }),
  );
}

/** The Secrets a pod reads: envFrom, env valueFrom and volumes. */
function secretsOf(pod: Rendered): string[] {
  const names = new Set<string>();
  for (const container of [...(pod.initContainers ?? []), ...pod.containers]) {
    for (const from of container.envFrom ?? []) if (from.secretRef) names.add(from.secretRef.name);
    for (const env of container.env ?? []) {
      if (env.valueFrom?.secretKeyRef) names.add(env.valueFrom.secretKeyRef.name);
    }
  }
  for (const volume of pod.volumes ?? []) {
    if (volume.secret) names.add(volume.secret.secretName);
    for (const source of volume.projected?.sources ?? []) if (source.secret) names.add(source.secret.name);
  }
  return [...names];
}

/** The variables a pod's containers set by name. */
function variablesOf(pod: Rendered): string[] {
  return pod.containers.flatMap((c: { env?: Array<{ name: string }> }) => (c.env ?? []).map((e) => e.name));
}

/** A generated Secret's name without kustomize's content hash. */
function withoutHash(name: string): string {
  return name.replace(/-[a-z0-9]{10}$/, "");
}

function findKustomize(): string | undefined {
  if (process.env.DISPATCH_KUSTOMIZE) return process.env.DISPATCH_KUSTOMIZE;
  const cache =
    process.env.DISPATCH_TOOLS_CACHE ??
    join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "agent-dispatch", "manifest-tools");
  const go = join(cache, "go");
  const cached = existsSync(go)
    ? readdirSync(go)
        .filter((d) => d.startsWith("kustomize-"))
        .map((d) => join(go, d, "kustomize"))
        .find((path) => existsSync(path))
    : undefined;
  if (cached) return cached;
  return spawnSync("kustomize", ["version"]).status === 0 ? "kustomize" : undefined;
}
