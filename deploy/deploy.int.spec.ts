import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Ajv } from 'ajv';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { parseContractFile } from '@oncegate/contracts';
import { applyEnvironment, parseGatewayConfig } from '@oncegate/host-config';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CHART = join(ROOT, 'deploy/helm/oncegate');
const run = promisify(execFile);

/** Where helm is: ONCEGATE_HELM, on the PATH, or where `go install helm.sh/helm/v3/cmd/helm@v3.22.0` puts it (.ci/run does). */
function findHelm(): string {
  const candidates = [process.env['ONCEGATE_HELM'], 'helm'];
  try {
    candidates.push(join(execFileSync('go', ['env', 'GOPATH'], { encoding: 'utf8' }).trim(), 'bin/helm'));
  } catch {
    // no Go: only the other places
  }
  for (const candidate of candidates) {
    if (candidate === undefined) continue;
    try {
      execFileSync(candidate, ['version', '--short'], { stdio: 'ignore' });
      return candidate;
    } catch {
      // not this one
    }
  }
  throw new Error('helm not found: go install helm.sh/helm/v3/cmd/helm@v3.22.0 (.ci/run does), or set ONCEGATE_HELM');
}

/** The ENTRYPOINT of each target of deploy/images/Dockerfile. */
function imageEntrypoints(): Map<string, string[]> {
  const targets = new Map<string, string[]>();
  let current: string | undefined;
  for (const line of readFileSync(join(ROOT, 'deploy/images/Dockerfile'), 'utf8').split('\n')) {
    const from = /^FROM \S+ AS (\S+)$/.exec(line);
    if (from) current = from[1];
    const entrypoint = /^ENTRYPOINT (\[.*\])$/.exec(line);
    if (entrypoint && current !== undefined) targets.set(current, JSON.parse(entrypoint[1]!) as string[]);
  }
  return targets;
}

/** The services `oncegate serve` documents (the choices its help lists), and the command each one's container must run. */
function servedServices(): string[] {
  // The help is wrapped to the terminal's width: read word by word.
  const help = execFileSync(process.execPath, [join(ROOT, 'bin/oncegate.mjs'), 'serve', '--help'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
  return [.../ service the services to run \(choices: ([^)]+)\)/.exec(help)![1]!.matchAll(/"([^"]+)"/g)].map((match) => match[1]!);
}
function expectedCommand(service: string): string[] {
  return service === 'gateway' ? ['node', 'bin/oncegate.mjs', 'serve', 'gateway'] : ['node', `dist/apps/${service}/main.js`];
}

/** The environment variables the configuration reference (README) documents. */
function documentedEnvironment(): Set<string> {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  return new Set([...readme.matchAll(/`(ONCEGATE_[A-Z_]+)`/g)].map((match) => match[1]!));
}

/** A configuration as every process would read it, with the values the deployment gives through the environment. */
function parsedConfig(text: string, file: string, env: NodeJS.ProcessEnv = { ONCEGATE_STORE_URL: 'postgres://oncegate:secret@postgres:5432/oncegate', ONCEGATE_KAFKA_BROKERS: 'kafka:9092' }) {
  return applyEnvironment(parseGatewayConfig(text, file, undefined, env), env);
}

interface Manifest {
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string>; readonly annotations?: Record<string, string> };
  readonly spec?: { readonly template?: { readonly spec: PodSpec }; readonly replicas?: number };
  readonly data?: Record<string, string>;
}
interface PodSpec {
  readonly containers: Array<{ image: string; args?: string[]; command?: string[]; env?: Array<{ name: string }>; securityContext?: Record<string, unknown>; livenessProbe?: unknown; readinessProbe?: unknown }>;
  readonly securityContext?: Record<string, unknown>;
}

describe('deploy/: the image definitions, the Compose file and the Helm chart, checked without a container engine', () => {
  let helm: string;
  const entrypoints = imageEntrypoints();
  const environment = documentedEnvironment();
  let services: string[];

  beforeAll(() => {
    helm = findHelm();
    services = servedServices();
  }, 60_000);

  const render = async (...set: string[]): Promise<Manifest[]> => {
    const { stdout } = await run(helm, ['template', 'demo', CHART, ...set.flatMap((value) => ['--set', value])]);
    return parseAllDocuments(stdout).map((document) => document.toJS() as Manifest).filter((manifest) => manifest !== null);
  };

  it('given the Dockerfile, then every service oncegate serve documents has a target that runs exactly that service, and each app it names is built', () => {
    expect(services).toEqual(['gateway', 'authorization', 'dispatcher-http', 'dispatcher-ssh', 'dispatcher-mcp', 'result-delivery', 'sealer', 'relay-kafka']);
    for (const service of services) {
      expect(entrypoints.get(service), service).toEqual(expectedCommand(service));
      expect(existsSync(join(ROOT, expectedCommand(service)[1]!)), `${service}: ${expectedCommand(service)[1]} is built`).toBe(true);
    }
    expect(entrypoints.get('cli')).toEqual(['node', 'bin/oncegate.mjs']);
    // A channel on the dispatcher kit is a service of its own, though the gateway's CLI does not know it.
    expect(entrypoints.get('dispatcher-sql')).toEqual(expectedCommand('dispatcher-sql'));
    expect(existsSync(join(ROOT, 'dist/apps/dispatcher-sql/main.js'))).toBe(true);
    const dockerfile = readFileSync(join(ROOT, 'deploy/images/Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toMatch(/^FROM \$\{NODE_IMAGE\} AS build$/m);
  });

  it('given the chart, when linted, then helm finds nothing wrong', async () => {
    const { stdout } = await run(helm, ['lint', CHART, '--strict']);
    expect(stdout).toContain('0 chart(s) failed');
  });

  it('given the chart in split mode, when rendered, then each service is a Deployment running its documented command as non-root on a read-only root, probed on /healthz and /readyz, with only documented variables', async () => {
    const manifests = await render('kafka.brokers=kafka:9092', 'services.relay-kafka.replicas=1', 'tracing.endpoint=http://otel-collector:4318');
    const deployments = manifests.filter((manifest) => manifest.kind === 'Deployment');
    expect(deployments.map((deployment) => deployment.metadata.labels!['app.kubernetes.io/component']).sort()).toEqual([...services].sort());
    for (const deployment of deployments) {
      const service = deployment.metadata.labels!['app.kubernetes.io/component']!;
      const pod = deployment.spec!.template!.spec;
      const [container] = pod.containers;
      const target = /\/([^/:]+):[^/]+$/.exec(container!.image)![1]!;
      expect(target, service).toBe(service);
      expect([...entrypoints.get(target)!, ...container!.args!], service).toEqual([...expectedCommand(service), '--config', '/etc/oncegate/oncegate.yaml']);
      expect(container!.securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
      expect(container!.livenessProbe).toMatchObject({ httpGet: { path: '/healthz' } });
      expect(container!.readinessProbe).toMatchObject({ httpGet: { path: '/readyz' } });
      for (const variable of container!.env ?? []) expect(environment.has(variable.name), `${service}: ${variable.name} is documented`).toBe(true);
      expect((container!.env ?? []).map((variable) => variable.name), service).toEqual(expect.arrayContaining(['ONCEGATE_MASTER_KEY_FILE', 'ONCEGATE_STORE_URL', 'ONCEGATE_OTLP_ENDPOINT', 'ONCEGATE_KAFKA_BROKERS']));
    }
    expect(deployments.find((deployment) => deployment.metadata.name === 'demo-authorization')!.spec!.replicas).toBe(2);
    const config = manifests.find((manifest) => manifest.kind === 'ConfigMap')!.data!;
    const parsed = parsedConfig(config['oncegate.yaml']!, 'ConfigMap demo-config oncegate.yaml');
    expect(parsed).toMatchObject({ dataDir: '/data', store: { driver: 'postgres' }, operations: { host: '0.0.0.0', port: 9464 }, kafka: { brokers: ['kafka:9092'] } });
    expect(() => parseContractFile(config['tools.yaml']!, 'ConfigMap demo-config tools.yaml')).not.toThrow();
    const init = manifests.find((manifest) => manifest.kind === 'Job')!;
    expect(init.metadata.annotations!['helm.sh/hook']).toBe('post-install,post-upgrade');
    // Approvers and agents from Secrets: each registered by the init Job with its token from the environment.
    const bootstrapped = await render('bootstrap.approvers[0].name=alice', 'bootstrap.approvers[0].secret.name=oncegate-approver-alice', 'bootstrap.approvers[0].secret.key=token', 'bootstrap.agents[0].name=ci', 'bootstrap.agents[0].secret.name=oncegate-agent-ci', 'bootstrap.agents[0].secret.key=token');
    const job = bootstrapped.find((manifest) => manifest.kind === 'Job')! as unknown as { spec: { template: { spec: { containers: Array<{ args: string[]; env: Array<{ name: string; valueFrom?: { secretKeyRef: { name: string } } }> }> } } } };
    const [initContainer] = job.spec.template.spec.containers;
    expect(initContainer!.args[0]).toContain('node bin/oncegate.mjs approvers add alice --token-from-env ONCEGATE_BOOTSTRAP_APPROVER_0 --config /etc/oncegate/oncegate.yaml');
    expect(initContainer!.args[0]).toContain('node bin/oncegate.mjs agents add ci --token-from-env ONCEGATE_BOOTSTRAP_AGENT_0');
    expect(initContainer!.env.find((variable) => variable.name === 'ONCEGATE_BOOTSTRAP_APPROVER_0')?.valueFrom?.secretKeyRef.name).toBe('oncegate-approver-alice');
  });

  it('given the chart in embedded mode, when rendered, then one Deployment runs oncegate start on SQLite in the claimed volume', async () => {
    const manifests = await render('mode=embedded', 'persistence.accessMode=ReadWriteOnce');
    const deployments = manifests.filter((manifest) => manifest.kind === 'Deployment');
    expect(deployments).toHaveLength(1);
    const [container] = deployments[0]!.spec!.template!.spec.containers;
    expect([...entrypoints.get('cli')!, ...container!.args!]).toEqual(['node', 'bin/oncegate.mjs', 'start', '--config', '/etc/oncegate/oncegate.yaml']);
    expect(manifests.filter((manifest) => manifest.kind === 'PersistentVolumeClaim')).toHaveLength(1);
    expect(manifests.some((manifest) => manifest.kind === 'Job')).toBe(false);
    expect((container!.env ?? []).map((variable) => variable.name)).not.toContain('ONCEGATE_STORE_URL');
    const config = manifests.find((manifest) => manifest.kind === 'ConfigMap')!.data!;
    expect(parsedConfig(config['oncegate.yaml']!, 'oncegate.yaml', {}).store).toEqual({ driver: 'sqlite', synchronous: 'FULL' });
  });

  it('given deploy/compose.yaml, then it is valid against the Compose specification, and each Oncegate service runs its documented command with documented variables and a configuration that parses', () => {
    const text = readFileSync(join(ROOT, 'deploy/compose.yaml'), 'utf8');
    const compose = parseYaml(text, { merge: true }) as { services: Record<string, { build?: { target?: string }; environment?: Record<string, string>; read_only?: boolean; user?: string; entrypoint?: string[] }> };
    // The specification's schema names its draft-07 meta-schema without the trailing '#', which Ajv does not know by that name.
    const { $schema: _draft, ...schema } = JSON.parse(readFileSync(join(ROOT, 'deploy/compose-spec/compose-spec.json'), 'utf8')) as Record<string, unknown>;
    const validate = new Ajv({ strict: false, allErrors: true }).compile(schema);
    expect(validate(compose), JSON.stringify(validate.errors?.slice(0, 5))).toBe(true);
    for (const service of services) {
      const entry = compose.services[service];
      expect(entry, service).toBeDefined();
      expect(entry!.build?.target, service).toBe(service);
      expect(entrypoints.get(service), service).toEqual(expectedCommand(service));
      expect(entry!.read_only, service).toBe(true);
      expect(entry!.user, service).toBe('1000:1000');
      for (const name of Object.keys(entry!.environment ?? {})) expect(environment.has(name), `${service}: ${name} is documented`).toBe(true);
    }
    expect(compose.services['init']!.build?.target).toBe('cli');
    const config = parsedConfig(readFileSync(join(ROOT, 'deploy/compose/oncegate.yaml'), 'utf8'), 'deploy/compose/oncegate.yaml');
    expect(config).toMatchObject({ store: { driver: 'postgres' }, operations: { port: 9464 }, kafka: { brokers: ['kafka:9092'], decisions: { topic: 'oncegate.decisions' } } });
    expect(parseContractFile(readFileSync(join(ROOT, 'deploy/compose/tools.yaml'), 'utf8'), 'deploy/compose/tools.yaml').tools.length).toBeGreaterThan(0);
    // A mistake the schema must catch, so the check above can fail.
    expect(validate({ services: { gateway: { imaeg: 'oncegate/gateway' } } })).toBe(false);
  });

  it('given the Grafana dashboard, then every metric its panels query is one the services define', () => {
    const dashboard = JSON.parse(readFileSync(join(ROOT, 'deploy/grafana/oncegate-dashboard.json'), 'utf8')) as { panels: Array<{ targets: Array<{ expr: string }> }> };
    const sources = (readdirSync(join(ROOT, 'libs'), { recursive: true }) as string[])
      .filter((file) => file.endsWith('.ts') && !file.endsWith('.spec.ts'))
      .map((file) => readFileSync(join(ROOT, 'libs', file), 'utf8'))
      .join('\n');
    const defined = new Set([...sources.matchAll(/(?:name: |[gG]auge\()'(oncegate_[a-z_]+)'/g)].map((match) => match[1]!));
    const queried = new Set(dashboard.panels.flatMap((panel) => panel.targets.flatMap((target) => [...target.expr.matchAll(/oncegate_[a-z_]+/g)].map((match) => match[0].replace(/_(bucket|sum|count)$/, '')))));
    expect(queried.size).toBeGreaterThan(8);
    expect([...queried].filter((name) => !defined.has(name))).toEqual([]);
  });
});
