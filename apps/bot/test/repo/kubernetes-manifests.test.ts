/**
 * deploy/kubernetes, parsed: every object valid against its kind's schema (the Kubernetes OpenAPI
 * schemas `kubernetes-models` compiles, KEDA's CRD schema from `@kubernetes-models/keda`) and
 * holding no field its schema does not know (those schemas, like the API server's, ignore unknown
 * fields, while `kubectl apply` refuses them: a misspelt `readinesProbe` would pass unseen), and
 * wired together: probes on ports the containers expose, the Service and the disruption budget on the
 * bot pods, KEDA on the worker Deployment and on the Redis key where BullMQ keeps Ebb's passes, and
 * every variable taken from the Secret one that Ebb reads.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ENV_NAMES, loadConfig, loadEnv } from '@ebb/config';
import { COMPACTION_QUEUE_NAME, redisKeys } from '@ebb/queue';
import { ScaledObject } from '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject';
import { Deployment } from 'kubernetes-models/apps/v1/Deployment';
import { Job } from 'kubernetes-models/batch/v1/Job';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap } from 'kubernetes-models/v1/ConfigMap';
import { Namespace } from 'kubernetes-models/v1/Namespace';
import { Secret } from 'kubernetes-models/v1/Secret';
import { Service } from 'kubernetes-models/v1/Service';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const DIR = join(ROOT, 'deploy/kubernetes');

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: each kind's own shape; the schemas check it.
  spec?: any;
  stringData?: Record<string, string>;
}
interface Probe {
  httpGet?: { path: string; port: string | number };
  tcpSocket?: { port: string | number };
  exec?: { command: string[] };
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
  }[];
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers: Container[];
  volumes?: { name: string; configMap?: { name: string }; emptyDir?: object }[];
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  terminationGracePeriodSeconds?: number;
}

type ErrorList = readonly { instancePath: string; message?: string }[];
type Validate = (object: unknown) => ErrorList;

/** A kind's schema: the model's `validate()`, with the errors it throws returned. */
function validatorOf(Model: new (data: never) => { validate(): void }): Validate {
  return (object) => {
    try {
      new Model(object as never).validate();
      return [];
    } catch (err) {
      const errors = (err as { errors?: ErrorList }).errors;
      if (errors === undefined) throw err;
      return errors;
    }
  };
}

const SCHEMAS: Record<string, Validate> = {
  'v1/Namespace': validatorOf(Namespace),
  'v1/ConfigMap': validatorOf(ConfigMap),
  'v1/Secret': validatorOf(Secret),
  'v1/Service': validatorOf(Service),
  'apps/v1/Deployment': validatorOf(Deployment),
  'batch/v1/Job': validatorOf(Job),
  'policy/v1/PodDisruptionBudget': validatorOf(PodDisruptionBudget),
  'keda.sh/v1alpha1/ScaledObject': validatorOf(ScaledObject),
};

function schemaOf(object: Manifest): Validate {
  const validate = SCHEMAS[`${object.apiVersion}/${object.kind}`];
  if (validate === undefined) throw new Error(`no schema for ${object.apiVersion} ${object.kind}`);
  return validate;
}

const pointer = (path: readonly (string | number)[]) =>
  path.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');

function setAt(root: unknown, path: readonly (string | number)[], value: unknown): void {
  let node = root as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path.at(-1) as string | number] = value;
}

/**
 * The fields of `object` its schema does not know. A known field's value is checked, so replacing it
 * with something no field accepts (an object for a scalar, list or map field; a number for an object
 * field) makes the schema complain at that path; an unknown field is ignored whatever it holds.
 */
function unknownFields(validate: Validate, object: unknown): string[] {
  const unknown: string[] = [];
  const walk = (node: unknown, path: (string | number)[]) => {
    if (Array.isArray(node)) {
      for (const [i, item] of node.entries()) walk(item, [...path, i]);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    for (const [key, value] of Object.entries(node)) {
      const at = [...path, key];
      const known = [{ '': [] }, 0.5].some((probe) => {
        const copy = structuredClone(object);
        setAt(copy, at, probe);
        const here = pointer(at);
        return validate(copy).some((e) => e.instancePath === here || e.instancePath.startsWith(`${here}/`));
      });
      if (known) walk(value, at);
      else unknown.push(pointer(at));
    }
  };
  walk(object, []);
  return unknown;
}

interface Kustomization {
  namespace: string;
  resources: string[];
  configMapGenerator: { name: string; files: string[] }[];
  images: { name: string; newName: string; newTag: string }[];
}
const kustomization = parse(readFileSync(join(DIR, 'kustomization.yaml'), 'utf8')) as Kustomization;

/** Every object of every manifest file, by file (secret.example.yaml included). */
const files = readdirSync(DIR)
  .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
  .sort();
const byFile = new Map(
  files.map((file) => {
    const documents = parseAllDocuments(readFileSync(join(DIR, file), 'utf8'));
    for (const d of documents) if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0]?.message}`);
    return [file, documents.map((d) => d.toJS() as Manifest)];
  }),
);

/** The ConfigMaps kustomize makes from configMapGenerator (before it adds the hash to the name). */
const generated: Manifest[] = kustomization.configMapGenerator.map(({ name, files: sources }) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name },
  data: Object.fromEntries(sources.map((f) => [posix.basename(f), readFileSync(join(DIR, f), 'utf8')])),
}));

const applied = kustomization.resources.flatMap((file) => byFile.get(file) ?? []);
const all = [...[...byFile.values()].flat(), ...generated];

function one(kind: string, name: string): Manifest {
  const found = [...applied, ...generated].filter((o) => o.kind === kind && o.metadata.name === name);
  expect(found, `${kind} ${name}`).toHaveLength(1);
  return found[0] as Manifest;
}
const pod = (workload: Manifest): PodSpec => workload.spec.template.spec;
const labels = (workload: Manifest): Record<string, string> => workload.spec.template.metadata.labels;
const selects = (selector: Record<string, string>, of: Record<string, string>) =>
  Object.entries(selector).every(([k, v]) => of[k] === v);

const bot = one('Deployment', 'ebb-bot');
const worker = one('Deployment', 'ebb-worker');
const migrateJob = one('Job', 'ebb-migrate');
const workloads = [bot, worker, migrateJob];
const exampleSecret = byFile.get('secret.example.yaml')?.[0] as Manifest;

function envOf(container: Container, name: string): string | undefined {
  return container.env?.find((e) => e.name === name)?.value;
}

describe('deploy/kubernetes against the Kubernetes and KEDA schemas', () => {
  it('holds only kinds it has a schema for, each valid', () => {
    expect(all.length).toBeGreaterThanOrEqual(9);
    for (const object of all) {
      const where = `${object.kind} ${object.metadata?.name}`;
      expect({ where, errors: schemaOf(object)(object) }).toEqual({ where, errors: [] });
    }
  });

  it('holds no field its schema does not know', () => {
    for (const object of all) {
      const where = `${object.kind} ${object.metadata?.name}`;
      expect({ where, unknown: unknownFields(schemaOf(object), object) }).toEqual({ where, unknown: [] });
    }
  });

  it('is checked by a field check that finds a misspelt key', () => {
    const typo = structuredClone(bot);
    const container = pod(typo).containers[0] as Container & Record<string, unknown>;
    container.readinesProbe = container.readinessProbe;
    delete container.readinessProbe;
    expect(unknownFields(schemaOf(typo), typo)).toEqual(['/spec/template/spec/containers/0/readinesProbe']);
  });

  it('gives a KEDA ScaledObject the shape KEDA requires', () => {
    const scaled = one('ScaledObject', 'ebb-worker');
    expect(scaled.spec.scaleTargetRef.name).toEqual(expect.any(String));
    expect(scaled.spec.triggers.length).toBeGreaterThan(0);
    for (const trigger of scaled.spec.triggers) {
      expect(trigger.type).toBe('redis');
      // KEDA's redis scaler: host:port, a key, and the target count as a string of digits.
      expect(trigger.metadata).toEqual({
        address: expect.stringMatching(/^[a-z0-9.-]+:\d+$/),
        listName: expect.any(String),
        listLength: expect.stringMatching(/^\d+$/),
      });
    }
  });
});

describe('kustomization.yaml', () => {
  it('lists every manifest but the example Secret, which apply -k would blank a real Secret with', () => {
    expect([...kustomization.resources].sort()).toEqual(files.filter((f) => f !== 'secret.example.yaml'));
  });

  it('names the image every container runs', () => {
    const images = new Set(workloads.flatMap((w) => pod(w).containers.map((c) => c.image)));
    expect([...images]).toEqual(kustomization.images.map((i) => i.name));
  });
});

describe('the workloads', () => {
  it('run the image’s ebb commands: start, worker, migrate', () => {
    expect(workloads.map((w) => pod(w).containers.map((c) => c.args))).toEqual([
      [['start']],
      [['worker']],
      [['migrate']],
    ]);
  });

  it('probe only ports their containers expose', () => {
    for (const workload of workloads) {
      for (const container of pod(workload).containers) {
        const exposed = new Set<string | number>(
          (container.ports ?? []).flatMap((p) => [p.containerPort, ...(p.name ? [p.name] : [])]),
        );
        for (const probe of [container.startupProbe, container.readinessProbe, container.livenessProbe]) {
          if (probe === undefined) continue;
          const port =
            probe.httpGet?.port ??
            probe.tcpSocket?.port ??
            Number(/127\.0\.0\.1:(\d+)\/healthz/.exec(probe.exec?.command.join(' ') ?? '')?.[1]);
          expect({ container: container.name, port, exposed: exposed.has(port) }).toEqual({
            container: container.name,
            port,
            exposed: true,
          });
          if (probe.httpGet) expect(probe.httpGet.path).toBe('/healthz');
        }
      }
    }
    // The long-running ones are probed from start to finish.
    for (const container of [...pod(bot).containers, ...pod(worker).containers]) {
      expect(container.startupProbe?.httpGet?.path).toBe('/healthz');
      expect(container.readinessProbe).toBeDefined();
      expect(container.livenessProbe).toBeDefined();
    }
  });

  it('run as the image’s non-root user', () => {
    expect(readFileSync(join(ROOT, 'Dockerfile'), 'utf8')).toMatch(/^USER node$/m);
    for (const workload of workloads) {
      // node is uid 1000 in the Node images; runAsNonRoot cannot check a user name.
      expect(pod(workload).securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    }
  });

  it('take from the Secret only variables Ebb reads, each under its own name in the example Secret', () => {
    const secretName = exampleSecret.metadata.name;
    const keys = Object.keys(exampleSecret.stringData ?? {});
    for (const workload of workloads) {
      for (const container of pod(workload).containers) {
        for (const env of container.env ?? []) {
          expect(ENV_NAMES).toContain(env.name);
          const ref = env.valueFrom?.secretKeyRef;
          if (ref === undefined) continue;
          expect(ref).toMatchObject({ name: secretName, key: env.name });
          expect(keys).toContain(ref.key);
        }
      }
    }
    for (const key of keys) expect(ENV_NAMES).toContain(key);
    for (const [key, value] of Object.entries(exampleSecret.stringData ?? {})) {
      expect({ key, value }).toEqual({ key, value: '' });
    }
  });

  it('require the tokens without which Ebb refuses to start beyond loopback', () => {
    const required = (container: Container, name: string) =>
      container.env?.find((e) => e.name === name)?.valueFrom?.secretKeyRef?.optional !== true;
    const [botContainer] = pod(bot).containers as [Container];
    const [workerContainer] = pod(worker).containers as [Container];
    expect(required(botContainer, 'EBB_ADMIN_TOKEN')).toBe(true);
    expect(envOf(workerContainer, 'EBB_METRICS_HOST')).toBe('0.0.0.0');
    expect(required(workerContainer, 'EBB_METRICS_TOKEN')).toBe(true);
  });

  it('mount the generated config (the whole ConfigMap, no subPath) where EBB_CONFIG points', () => {
    const [configMap] = generated as [Manifest & { data: Record<string, string> }];
    for (const workload of [bot, worker]) {
      const spec = pod(workload);
      const volume = spec.volumes?.find((v) => v.configMap?.name === configMap.metadata.name);
      const [container] = spec.containers as [Container];
      const mount = container.volumeMounts?.find((m) => m.name === volume?.name);
      const configFile = envOf(container, 'EBB_CONFIG') ?? '';
      expect(posix.dirname(configFile)).toBe(mount?.mountPath);
      expect(Object.keys(configMap.data)).toContain(posix.basename(configFile));
    }
  });

  it('keep the bot’s data directory on a volume of its own', () => {
    const dataDir = posix.join('/app', loadEnv({}).EBB_DATA_DIR);
    const spec = pod(bot);
    const mount = spec.containers[0]?.volumeMounts?.find((m) => m.mountPath === dataDir);
    expect(spec.volumes?.find((v) => v.name === mount?.name)?.emptyDir).toBeDefined();
  });

  it('give a stopping bot more than [shutdown] grace_seconds, and a worker more than its 30 s', async () => {
    const config = await loadConfig({ path: join(DIR, 'config.toml') });
    expect(pod(bot).terminationGracePeriodSeconds).toBeGreaterThan(config.shutdown.grace_seconds);
    expect(pod(worker).terminationGracePeriodSeconds).toBeGreaterThan(30);
  });
});

describe('the bots', () => {
  it('run two replicas, at most one of them disrupted at a time', () => {
    expect(bot.spec.replicas).toBe(2);
    const budget = one('PodDisruptionBudget', 'ebb-bot');
    expect(budget.spec.maxUnavailable).toBe(1);
    expect(selects(budget.spec.selector.matchLabels, labels(bot))).toBe(true);
    expect(selects(budget.spec.selector.matchLabels, labels(worker))).toBe(false);
  });

  it('are the Service’s pods, on the web channel’s port and the Events API’s ([web] port + 1)', async () => {
    const service = one('Service', 'ebb-bot');
    expect(selects(service.spec.selector, labels(bot))).toBe(true);
    expect(selects(service.spec.selector, labels(worker))).toBe(false);
    const config = await loadConfig({ path: join(DIR, 'config.toml') });
    expect(config.web.host).toBe('0.0.0.0');
    const ports = new Map((pod(bot).containers[0]?.ports ?? []).map((p) => [p.name, p.containerPort]));
    const served = (service.spec.ports as { port: number; targetPort: string }[]).map((p) => ({
      port: p.port,
      target: ports.get(p.targetPort),
    }));
    expect(served).toEqual([
      { port: config.web.port, target: config.web.port },
      { port: config.web.port + 1, target: config.web.port + 1 },
    ]);
  });
});

describe('the workers', () => {
  const scaled = one('ScaledObject', 'ebb-worker');

  it('are scaled by KEDA, which alone sets their replicas, never to zero', () => {
    expect(scaled.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: worker.metadata.name });
    expect(worker.spec.replicas).toBeUndefined();
    // Only a running worker moves a delayed pass into the set KEDA watches, and runs the reconciler.
    expect(scaled.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
  });

  it('scale on the keys where BullMQ keeps the passes waiting, under the prefix the pods use', () => {
    const prefixes = new Set(
      [bot, worker].map((w) => envOf(pod(w).containers[0] as Container, 'EBB_REDIS_PREFIX')),
    );
    expect(prefixes.size).toBe(1);
    const queue = `${redisKeys([...prefixes][0]).bullmqPrefix}:${COMPACTION_QUEUE_NAME}`;
    // Every pass has a priority (tierPriority ≥ 1), so BullMQ keeps it in `prioritized`, not `wait`.
    expect(scaled.spec.triggers.map((t: { metadata: { listName: string } }) => t.metadata.listName)).toEqual([
      `${queue}:prioritized`,
      `${queue}:wait`,
    ]);
  });
});
