import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Logger } from '@nestjs/common';
import type { Kafka } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventStore } from '@oncegate/event-store';
import { openSqliteEventStore } from '@oncegate/event-store-sqlite';
import { systemClock } from '@oncegate/execution-journal';
import { approvalTools, approvalToolsYaml, paymentAwaitingApproval } from '@oncegate/host-decisions/testing';
import { ApproverDirectory } from '@oncegate/host-principals';
import { BusDecisions, decisionSigningBytes, type BusProducer } from '@oncegate/service-relay-kafka';
// eslint-disable-next-line @nx/enforce-module-boundaries -- the CLI runs as its own process, as the end-to-end suites run it
import { oncegate, type GatewayFolder } from '../../../../../test/support/gateway-process';
import { runCliHere } from '../testing/cli-in-process';

const TARGET = 'https://payments.example';
const LAUNCHER = new URL('../../../../../bin/oncegate.mjs', import.meta.url).pathname;

/** The CLI without a configuration (sign-decision runs where the key is, with no data folder). */
function bare(args: string[], cwd: string, stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [LAUNCHER, ...args], { cwd }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : null, stdout, stderr }),
    );
    child.stdin?.end(stdin ?? '');
  });
}

/** Whether `jq` is here: the docs' recipe without Oncegate uses it (.ci/run installs it when missing). */
const hasJq = (() => {
  try {
    execFileSync('jq', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** The base64 body of a PEM file, to look for anywhere it must not be. */
const pemBody = (file: string) => readFileSync(file, 'utf8').replace(/-----[A-Z ]+-----/g, '').replace(/\s+/g, '');

describe('oncegate approvers key and sign-decision (the real CLI process on a SQLite data folder, keys made by openssl)', () => {
  let folder: GatewayFolder;
  let store: EventStore;
  let keys: string;
  const run = (...args: string[]) => oncegate(folder, args);
  /**
   * The same command through the CLI's entry in this process (runCliHere: the exit code and every byte of output, as
   * a process gives them), for the refusals: what they prove is what the command checks and says.
   */
  const here = (...args: string[]) => runCliHere([...args, '--config', folder.configFile]);
  const key = (name: string) => join(keys, name);
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: keys, stdio: ['ignore', 'pipe', 'pipe'] });
  /** Every byte the data folder's journal holds. */
  const journalBytes = () =>
    readdirSync(folder.dataDir)
      .filter((file) => file.startsWith('events.db'))
      .map((file) => readFileSync(join(folder.dataDir, file)).toString('latin1'))
      .join('');
  const relay = (requireSignature: boolean) =>
    new BusDecisions({
      kafka: {} as Kafka,
      producer: {} as BusProducer,
      config: { topic: 'oncegate.decisions', replies: 'oncegate.decision-outcomes', group: 'g', requireSignature },
      source: 'oncegate-test',
      store,
      approvers: new ApproverDirectory(store),
      tools: approvalTools(TARGET),
      clock: systemClock,
      logger: new Logger('test'),
    });

  beforeAll(() => {
    const dir = mkdtempSync(join(tmpdir(), 'oncegate-approver-keys-cli-'));
    const dataDir = join(dir, 'data');
    const configFile = join(dir, 'oncegate.yaml');
    writeFileSync(join(dir, 'tools.yaml'), approvalToolsYaml(TARGET));
    writeFileSync(configFile, `data_dir: ${dataDir}\ncontracts: ${join(dir, 'tools.yaml')}\n`);
    mkdirSync(dataDir, { recursive: true });
    folder = { dir, dataDir, journal: dataDir, configFile, port: 0, url: '', dispose: () => rmSync(dir, { recursive: true, force: true }) };
    store = openSqliteEventStore({ file: join(folder.dataDir, 'events.db') });
    keys = join(dir, 'keys');
    mkdirSync(keys);
    // What an approver runs to make their key pair, as docs/bus.md says.
    for (const name of ['alice', 'bob']) {
      openssl('genpkey', '-algorithm', 'ed25519', '-out', `${name}.pem`);
      openssl('pkey', '-in', `${name}.pem`, '-pubout', '-out', `${name}.pub.pem`);
    }
    openssl('genpkey', '-algorithm', 'rsa', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', 'rsa.pem');
    openssl('pkey', '-in', 'rsa.pem', '-pubout', '-out', 'rsa.pub.pem');
    openssl('req', '-x509', '-new', '-key', 'alice.pem', '-subj', '/CN=alice', '-days', '1', '-out', 'alice.crt');
    openssl('pkey', '-in', 'alice.pem', '-aes256', '-passout', 'pass:correct horse', '-out', 'alice.enc.pem');
    writeFileSync(key('alice.ssh.pub'), 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOharadSPZVolZxfK3hK5j8Q6Z8dUWzCgrvcQ/ep0qnk alice@laptop\n');
    writeFileSync(key('garbage.pem'), 'not a key at all\n');
  });

  afterAll(async () => {
    await store.close();
    folder.dispose();
  });

  it('given an approver with a key added by the CLI, when they sign a decision with sign-decision, then the relay requiring signatures applies it; after key revoke it is refused', async () => {
    expect((await run('approvers', 'add', 'alice')).code).toBe(0);
    const added = await run('approvers', 'key', 'add', 'alice', '--public-key', key('alice.pub.pem'));
    expect(added.code).toBe(0);
    const keyId = added.stdout.trim();
    expect(keyId).toMatch(/^[0-9a-f]{64}$/);
    expect(added.stderr).toBe(`added Ed25519 key ${keyId.slice(0, 16)} for approver:alice: decisions from the bus signed with it are taken as theirs\n`);
    expect(await run('approvers', 'key', 'add', 'alice', '--public-key', key('alice.pub.pem'))).toMatchObject({
      code: 0,
      stderr: `approver:alice already holds this key (key id ${keyId}); nothing changed\n`,
    });
    const listed = await run('approvers', 'key', 'list', '--pem');
    expect(listed.stdout).toMatch(new RegExp(`^approver:alice\\t${keyId}\\tEd25519\\tadded \\S+\\tactive\\n-----BEGIN PUBLIC KEY-----\\n`));
    expect(listed.stdout).toContain(pemBody(key('alice.pub.pem')));

    const id = await paymentAwaitingApproval(store, systemClock);
    const decisionFile = join(keys, 'decision.json');
    writeFileSync(decisionFile, JSON.stringify({ kind: 'approval', id: 'chg-1', execution_id: id, decision: 'approve', by: 'approver:alice', reason: 'invoice 4411 checked' }, null, 2));
    const signed = await bare(['approvers', 'sign-decision', '--key', key('alice.pem'), decisionFile], keys);
    expect(signed).toMatchObject({ code: 0, stderr: '' });
    expect(signed.stdout).toMatch(/^\{.*"signature":"[A-Za-z0-9+/]{86}=="\}\n$/);
    for (const said of [signed.stdout, listed.stdout, added.stdout, added.stderr]) expect(said).not.toContain(pemBody(key('alice.pem')));

    const revoked = await run('approvers', 'key', 'revoke', 'alice', keyId.slice(0, 8));
    expect(revoked).toMatchObject({ code: 0, stdout: `revoked key ${keyId} of approver:alice\n` });
    // Taken from the bus after the revocation: refused, whether or not signatures are required.
    for (const requireSignature of [true, false]) {
      expect(await relay(requireSignature).apply(Buffer.from(signed.stdout), 'p/0/1')).toMatchObject({ outcome: 'refused', refusal: 'bad_signature' });
    }
    expect(await run('approvers', 'key', 'revoke', 'alice')).toMatchObject({ code: 1, stdout: 'approver:alice has no active signing key\n' });
    expect((await run('approvers', 'key', 'list')).stdout).toMatch(/\trevoked \S+\n$/);

    expect((await run('approvers', 'key', 'add', 'alice', '--public-key', key('bob.pub.pem'))).code).toBe(0);
    const again = await bare(['approvers', 'sign-decision', '--key', key('bob.pem'), '-'], keys, readFileSync(decisionFile, 'utf8'));
    const reply = await relay(true).apply(Buffer.from(again.stdout), 'p/0/2');
    expect(reply).toMatchObject({ in_reply_to: 'chg-1', outcome: 'applied', refusal: null });
    expect(reply.message).toMatch(/^approval granted by approver:alice at \S+ \(signed with key [0-9a-f]{16}\)$/);

    const bytes = journalBytes();
    expect(bytes).toContain('ApproverKeyAdded');
    expect(bytes).toContain('ApproverKeyRevoked');
    expect(bytes).not.toContain(pemBody(key('alice.pem')));
    expect(bytes).not.toContain(pemBody(key('bob.pem')));
  });

  it.each([
    ['a private key', 'alice.pem', /^\S+alice\.pem holds a private key: give the public half instead \(openssl pkey -in \S+ -pubout -out public\.pem\); the private key stays with its approver\n$/],
    ['an encrypted private key', 'alice.enc.pem', /alice\.enc\.pem holds a private key: give the public half instead/],
    ['an RSA public key', 'rsa.pub.pem', /rsa\.pub\.pem holds a key of type rsa; decisions are signed with Ed25519 keys only \(openssl genpkey -algorithm ed25519/],
    ['a certificate', 'alice.crt', /alice\.crt is a certificate: give its public key \(openssl x509 -in \S+ -pubkey -noout > public\.pem\)\n$/],
    ['an OpenSSH public key', 'alice.ssh.pub', /alice\.ssh\.pub is an OpenSSH public key: give a PEM public key \(-----BEGIN PUBLIC KEY-----\), made with: openssl genpkey/],
    ['not a key', 'garbage.pem', /garbage\.pem is not a PEM public key \(-----BEGIN PUBLIC KEY-----, SPKI\)/],
    ['a file that does not exist', 'nowhere.pem', /^cannot read the public key file \S+nowhere\.pem: ENOENT\n$/],
  ])('given %s, when given to key add, then it is refused with what the file holds and nothing is recorded', async (_what, file, message) => {
    const head = await store.headPosition();
    const refused = await here('approvers', 'key', 'add', 'carol', '--public-key', key(file));
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(message);
    expect(await store.headPosition()).toBe(head);
    expect(refused.stderr).not.toContain(pemBody(key('alice.pem')));
    expect(journalBytes()).not.toContain(pemBody(key('alice.pem')));
  });

  it("given keys already held or revoked, when added again for someone else, then each is refused; a key id that is not one is a clear error", async () => {
    expect((await here('approvers', 'key', 'add', 'bob', '--public-key', key('bob.pub.pem'))).stderr).toBe(
      'this key is already registered for approver:alice: each approver signs with a key of their own\n',
    );
    expect((await here('approvers', 'key', 'add', 'bob', '--public-key', key('alice.pub.pem'))).stderr).toMatch(/^key [0-9a-f]{16} of approver:alice was revoked at \S+; a revoked key is not taken again: make a new key pair/);
    expect(await here('approvers', 'key', 'revoke', 'alice', 'zz')).toMatchObject({ code: 1, stderr: "'zz' is not a key id: give at least its first 8 hex digits, as oncegate approvers key list shows them\n" });
    expect((await here('approvers', 'key', 'add', 'Bad Name', '--public-key', key('rsa.pub.pem'))).code).toBe(1);
  });

  it('given a decision, when signed by sign-decision and by openssl pkeyutl -rawin over its canonical JSON, then both signatures are the same (Ed25519 is deterministic)', async () => {
    const decision = { reason: 'the provider shows no charge', by: 'approver:alice', kind: 'review', execution_id: 'ex_01K0000000000000000000000A', resolution: 'not_executed', resend: true };
    writeFileSync(key('review.json'), JSON.stringify(decision));
    const signed = await bare(['approvers', 'sign-decision', '--key', key('alice.pem'), key('review.json')], keys);
    expect(signed.code).toBe(0);
    const { signature, ...rest } = JSON.parse(signed.stdout) as { signature: string };
    expect(rest).toEqual(decision);
    writeFileSync(key('review.canonical.json'), decisionSigningBytes(decision));
    const byOpenssl = openssl('pkeyutl', '-sign', '-inkey', 'alice.pem', '-rawin', '-in', 'review.canonical.json').toString('base64');
    expect(signature).toBe(byOpenssl);
  });

  it.skipIf(!hasJq)("given the jq and openssl recipe of docs/bus.md, when run on a decision, then it prints what sign-decision prints", async () => {
    const doc = readFileSync(new URL('../../../../../docs/bus.md', import.meta.url), 'utf8');
    const recipe = [...doc.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1] ?? '').find((block) => block.includes('openssl pkeyutl -sign'));
    expect(recipe).toBeDefined();
    writeFileSync(key('decision.json'), '{ "kind": "approval", "id": "chg-4411", "execution_id": "ex_01K0000000000000000000000A", "decision": "approve", "by": "approver:alice", "reason": "invoice 4411 checked" }\n');
    const byRecipe = execFileSync('sh', ['-ec', recipe!], { cwd: keys }).toString();
    const bySignDecision = await bare(['approvers', 'sign-decision', '--key', 'alice.pem', 'decision.json'], keys);
    expect(JSON.parse(byRecipe)).toEqual(JSON.parse(bySignDecision.stdout));
  });

  it.each([
    ['a public key', ['--key', 'alice.pub.pem'], 'review.json', /alice\.pub\.pem holds a public key: signing needs the approver's private key/],
    ['an RSA private key', ['--key', 'rsa.pem'], 'review.json', /rsa\.pem holds a key of type rsa; decisions are signed with Ed25519 keys only/],
    ['an encrypted private key', ['--key', 'alice.enc.pem'], 'review.json', /alice\.enc\.pem is encrypted: sign with openssl instead, which asks for the passphrase/],
    ['a decision that is not one', ['--key', 'alice.pem'], 'garbage.pem', /garbage\.pem: not JSON/],
    ['a decision with a field the schema does not know', ['--key', 'alice.pem'], 'extra.json', /extra\.json: not a decision \(docs\/events\/bus-decision\.schema\.json\)/],
  ])('given %s, when sign-decision runs, then it is refused saying so and prints nothing to publish', async (_what, keyArgs, decisionFile, message) => {
    writeFileSync(key('extra.json'), JSON.stringify({ kind: 'approval', execution_id: 'ex_01K0000000000000000000000A', decision: 'approve', by: 'approver:alice', reason: 'x', approved: true }));
    // In this process (runCliHere), the files named by their full paths: the process runs of the tests above take them
    // by names relative to where the approver works.
    const refused = await runCliHere(['approvers', 'sign-decision', ...keyArgs.map((arg) => (arg.startsWith('--') ? arg : key(arg))), key(decisionFile)]);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(message);
    expect(refused.stderr).not.toContain(pemBody(key('alice.pem')));
  });
});
