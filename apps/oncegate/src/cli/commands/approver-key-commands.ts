import { createPrivateKey, type KeyObject } from 'node:crypto';
import { Command } from '@commander-js/extra-typings';
import { ApproverKeyError, approverPublicKey, PrincipalNameError, type ApproverDirectory } from '@oncegate/host-principals';
import { action, EXIT_CODES, UsageError, type CliIo, type ExitCode } from '@oncegate/host-cli';
import type { DataFolder } from '@oncegate/service-host';
import { decisionToSign, signDecision } from '@oncegate/service-relay-kafka';
import { configOption, withDataFolder } from '../command-helpers';

/** Opens the data folder for `work`; a refused key or name is printed, exit 1. */
function withApprovers(options: { readonly config?: string }, io: CliIo, work: (approvers: ApproverDirectory, folder: DataFolder) => Promise<ExitCode>): Promise<ExitCode> {
  return withDataFolder(options, io, async (folder) => {
    try {
      return await work(folder.approvers, folder);
    } catch (error) {
      if (error instanceof ApproverKeyError || error instanceof PrincipalNameError) {
        io.stderr(`${error.message}\n`);
        return EXIT_CODES.failed;
      }
      throw error;
    }
  });
}

/** A file's text, or exit 1 naming the file and the system's reason (never its content). */
async function readNamedFile(io: CliIo, path: string, what: string): Promise<string | ExitCode> {
  try {
    return await io.readFile(path);
  } catch (error) {
    io.stderr(`cannot read ${what} ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}\n`);
    return EXIT_CODES.failed;
  }
}

function keyAddCommand() {
  return new Command('add')
    .summary("Register an approver's Ed25519 public key, which signs their decisions taken from the bus.")
    .description(
      "Register an approver's Ed25519 public key (PEM, -----BEGIN PUBLIC KEY-----), which signs their decisions taken from the bus " +
        '(docs/bus.md). Only the public half is given and recorded: a private key file is refused. The same key again changes nothing; ' +
        "a key another approver holds, or one revoked before, is refused. Make a key pair with: openssl genpkey -algorithm ed25519 -out alice.pem " +
        '&& openssl pkey -in alice.pem -pubout -out alice.pub.pem',
    )
    .argument('<name>', "the approver's name (approver:<name>)")
    .requiredOption('--public-key <file>', 'the PEM file of the public key')
    .addOption(configOption())
    .action(
      action(async (io, name, options) => {
        const text = await readNamedFile(io, options.publicKey, 'the public key file');
        if (typeof text === 'number') return text;
        return withApprovers(options, io, async (approvers) => {
          const { record, added } = await approvers.addKey(name, approverPublicKey(text, options.publicKey));
          if (!added) {
            io.stderr(`${record.actor} already holds this key (key id ${record.keyId}); nothing changed\n`);
            return EXIT_CODES.ok;
          }
          io.stdout(`${record.keyId}\n`);
          io.stderr(`added Ed25519 key ${record.keyId.slice(0, 16)} for ${record.actor}: decisions from the bus signed with it are taken as theirs\n`);
          const hasToken = (await approvers.list()).some((token) => token.actor === record.actor && token.revokedAt === null);
          if (!hasToken) io.stderr(`note: ${record.actor} has no active token, and decisions in their name are refused until they have one: oncegate approvers add ${name}\n`);
          return EXIT_CODES.ok;
        });
      }),
    );
}

function keyListCommand() {
  return new Command('list')
    .summary("List the approvers' signing keys: approver, key id, added, active or revoked.")
    .option('--pem', 'print each active public key as PEM after its line')
    .addOption(configOption())
    .action(
      action((io, options) =>
        withApprovers(options, io, async (approvers) => {
          const keys = await approvers.keys();
          if (keys.length === 0) io.stdout('no signing keys yet; add one with: oncegate approvers key add <name> --public-key <file>\n');
          for (const key of keys) {
            io.stdout(`${key.actor}\t${key.keyId}\tEd25519\tadded ${key.addedAt}\t${key.revokedAt ? `revoked ${key.revokedAt}` : 'active'}\n`);
            if (options.pem === true && key.revokedAt === null) io.stdout(key.publicKeyPem);
          }
          return EXIT_CODES.ok;
        }),
      ),
    );
}

function keyRevokeCommand() {
  return new Command('revoke')
    .summary("Revoke an approver's signing keys (or one, by its key id); decisions signed with them are refused from then on.")
    .description(
      "Revoke an approver's signing keys, or only the one whose key id starts with <key-id> (at least 8 hex digits, as key list shows). " +
        'Decisions signed with a revoked key are refused as bad_signature, and the key is never taken again. Exit 1 when there was no such active key.',
    )
    .argument('<name>', "the approver's name")
    .argument('[key-id]', 'the key to revoke (its id or the first 8 or more hex digits of it); all of them without it')
    .addOption(configOption())
    .action(
      action((io, name, keyId, options) =>
        withApprovers(options, io, async (approvers) => {
          const revoked = await approvers.revokeKeys(name, keyId);
          if (revoked.length === 0) {
            io.stdout(`approver:${name} has no active signing key${keyId === undefined ? '' : ` whose id starts with ${keyId}`}\n`);
            return EXIT_CODES.failed;
          }
          for (const key of revoked) io.stdout(`revoked key ${key.keyId} of ${key.actor}\n`);
          return EXIT_CODES.ok;
        }),
      ),
    );
}

/** `oncegate approvers key …`: the Ed25519 public keys that sign approvers' decisions taken from the bus. */
export function approverKeyCommand(): Command {
  return new Command('key')
    .description("The Ed25519 public keys that sign approvers' decisions taken from the bus (kafka.decisions.require_signature): add, list, revoke.")
    .addCommand(keyAddCommand())
    .addCommand(keyListCommand())
    .addCommand(keyRevokeCommand());
}

/** The Ed25519 private key in a PEM file's text, or a message saying what the file holds instead. */
function signingKey(text: string, path: string): KeyObject | string {
  if (!/-----BEGIN (ENCRYPTED )?PRIVATE KEY-----/.test(text)) {
    return /-----BEGIN PUBLIC KEY-----/.test(text)
      ? `${path} holds a public key: signing needs the approver's private key (the file openssl genpkey wrote)`
      : `${path} is not a PEM private key (-----BEGIN PRIVATE KEY-----, PKCS#8), as openssl genpkey -algorithm ed25519 writes it`;
  }
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----/.test(text)) return `${path} is encrypted: sign with openssl instead, which asks for the passphrase (docs/bus.md)`;
  let key: KeyObject;
  try {
    key = createPrivateKey({ key: text, format: 'pem' });
  } catch (error) {
    return `${path} is not a readable private key: ${(error as Error).message}`;
  }
  return key.asymmetricKeyType === 'ed25519' ? key : `${path} holds a key of type ${key.asymmetricKeyType ?? 'unknown'}; decisions are signed with Ed25519 keys only`;
}

/** `oncegate approvers sign-decision`: an approver's tooling signs a decision before publishing it to the bus. */
export function signDecisionCommand() {
  return new Command('sign-decision')
    .summary('Sign a decision for the bus with an Ed25519 private key; prints the signed decision as one line of JSON.')
    .description(
      'Sign a decision (a JSON file, or - for standard input) with the approver\'s Ed25519 private key, read from --key only, and print it with ' +
        'signature added, as one line of JSON to publish on kafka.decisions.topic. The signature covers the RFC 8785 canonical JSON of the ' +
        'decision without signature (docs/bus.md). Needs no data folder: it runs where the key is.',
    )
    .argument('<decision>', 'the decision, a JSON file (- for standard input)')
    .requiredOption('--key <file>', "the approver's private key, PEM (PKCS#8), as openssl genpkey -algorithm ed25519 writes it")
    .action(
      action(async (io, file, options) => {
        let text: string | ExitCode;
        if (file === '-') {
          if (io.readStdin === undefined) throw new UsageError('no standard input here: name the decision file');
          text = await io.readStdin();
        } else {
          text = await readNamedFile(io, file, 'the decision');
        }
        if (typeof text === 'number') return text;
        let decision: Record<string, unknown>;
        try {
          decision = decisionToSign(text);
        } catch (error) {
          io.stderr(`${file === '-' ? 'standard input' : file}: ${(error as Error).message}\n`);
          return EXIT_CODES.failed;
        }
        const keyText = await readNamedFile(io, options.key, 'the key file');
        if (typeof keyText === 'number') return keyText;
        const key = signingKey(keyText, options.key);
        if (typeof key === 'string') {
          io.stderr(`${key}\n`);
          return EXIT_CODES.failed;
        }
        io.stdout(`${JSON.stringify(signDecision(decision, key))}\n`);
        return EXIT_CODES.ok;
      }),
    );
}
