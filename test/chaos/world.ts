import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDemoTargetProcess, type DemoTargetProcess, type EffectLog } from '../support/demo-target-process';
import { gatewayFolder, startGatewayProcess, type GatewayFolder, type GatewayProcess, type TestCredential } from '../support/gateway-process';
import { JournalFollower } from '../support/journal-follower';
import { startSshd, type SshdHandle } from '../support/sshd';

const HTTP_TOOLS = fileURLToPath(new URL('./chaos-tools.yaml', import.meta.url));
const REMOTE_TOOL = fileURLToPath(new URL('./chaos-remote-tool.yaml', import.meta.url));

export type TargetRequest = EffectLog['requests'][number];

/**
 * The processes of a campaign: the demo target, a real sshd when the machine has one, and one gateway process
 * on one data folder, restarted on that folder after a kill -9. The target's request log is archived before
 * every reset of its fault rules, so no request it ever saw is lost to the verdict.
 */
export class ChaosWorld {
  private archived: TargetRequest[] = [];
  /** Gateway starts so far (1 after `start`); an answer carries the generation it arrived in. */
  generation = 0;
  private restarting: Promise<void> = Promise.resolve();

  private constructor(
    readonly target: DemoTargetProcess,
    readonly folder: GatewayFolder,
    public gateway: GatewayProcess,
    readonly journal: JournalFollower,
    readonly sshd: SshdHandle | undefined,
    /** Why remote_command trials are skipped, when they are. */
    readonly sshUnavailable: string | undefined,
    private readonly contractsDir: string,
  ) {}

  static async start(): Promise<ChaosWorld> {
    const target = await startDemoTargetProcess();
    let sshd: SshdHandle | undefined;
    let sshUnavailable: string | undefined;
    try {
      sshd = await startSshd();
    } catch (error) {
      sshUnavailable = (error as Error).message;
    }
    const credentials: TestCredential[] = [];
    let contracts = readFileSync(HTTP_TOOLS, 'utf8').replaceAll('TARGET', target.url);
    if (sshd !== undefined) {
      const keyFile = join(sshd.workDir, 'client.key');
      writeFileSync(keyFile, sshd.clientPrivateKey, { mode: 0o600 });
      // The step lands in the effect log only after the pause: the connection can be cut before or after it.
      const script = join(sshd.workDir, 'step.sh');
      writeFileSync(script, `sleep "$2"\nprintf '%s\\n' "$1" >> ${join(sshd.workDir, 'effects.log')}\necho "ran $1"\n`);
      contracts += readFileSync(REMOTE_TOOL, 'utf8')
        .split('\n')
        .filter((line) => !line.startsWith('#'))
        .join('\n')
        .replace('SSH_PORT', String(sshd.port))
        .replace('SSH_USER', sshd.user)
        .replace('SSH_HOST_KEY', sshd.hostKey)
        .replace('SCRIPT', script)
        .replace('MARKERS', join(sshd.workDir, 'markers'));
      credentials.push({ ref: 'chaos-host-key', kind: 'ssh_key', bind: [`127.0.0.1:${sshd.port}`], fromFile: keyFile });
    }
    const contractsDir = mkdtempSync(join(tmpdir(), 'oncegate-chaos-'));
    const contractsFile = join(contractsDir, 'chaos-tools.yaml');
    writeFileSync(contractsFile, contracts);
    const folder = await gatewayFolder(target.url, { contracts: contractsFile, call_wait: '3s' }, credentials);
    const gateway = await startGatewayProcess(folder);
    const world = new ChaosWorld(target, folder, gateway, new JournalFollower(folder.dataDir), sshd, sshUnavailable, contractsDir);
    world.generation = 1;
    return world;
  }

  /** Resolves once the gateway is up (at once, unless a restart is under way). */
  ready(): Promise<void> {
    return this.restarting;
  }

  /** kill -9, then a new gateway process on the same data folder and port; `ready()` waits for it. */
  killAndRestart(): Promise<void> {
    this.restarting = (async () => {
      await this.gateway.kill();
      this.gateway = await startGatewayProcess(this.folder);
      this.generation += 1;
    })();
    return this.restarting;
  }

  /** Every request the target logged since the campaign started. */
  async targetRequests(): Promise<TargetRequest[]> {
    return [...this.archived, ...(await this.target.effects()).requests];
  }

  /** Releases held answers; if a one-shot fault rule was never used, archives the log and clears the rules. */
  async clearTargetFaults(): Promise<void> {
    await this.target.control('release', {});
    const state = (await (await fetch(`${this.target.url}/_control/state`)).json()) as { rules: unknown[]; held: unknown[] };
    if (state.rules.length === 0 && state.held.length === 0) return;
    this.archived.push(...(await this.target.effects()).requests);
    await this.target.control('reset-state', {});
  }

  /** The steps the remote host ran, one line each. */
  remoteEffects(): string[] {
    if (this.sshd === undefined) return [];
    const file = join(this.sshd.workDir, 'effects.log');
    return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter((line) => line !== '') : [];
  }

  async stop(): Promise<void> {
    await this.restarting.catch(() => undefined);
    await this.gateway.stop();
    await this.journal.close();
    await this.target.stop();
    await this.sshd?.stop();
    this.folder.dispose();
    rmSync(this.contractsDir, { recursive: true, force: true });
  }
}
