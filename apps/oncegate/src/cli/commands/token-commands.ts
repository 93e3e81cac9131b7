import { Command } from '@commander-js/extra-typings';
import { PrincipalNameError, PrincipalTokenError, type PrincipalDirectory } from '@oncegate/host-principals';
import { action, EXIT_CODES, UsageError, type CliIo, type ExitCode } from '@oncegate/host-cli';
import type { DataFolder } from '@oncegate/service-host';
import { configOption, withDataFolder } from '../command-helpers';

/** What differs between the token commands of agents and of approvers. */
export interface TokenCommandsSpec {
  /** `agents`, `approvers`. */
  readonly group: string;
  /** `agent`, `approver`: the principal's kind, as in its actor (`agent:<name>`). */
  readonly label: string;
  /** What the group's help says of it. */
  readonly description: string;
  readonly directory: (folder: DataFolder) => PrincipalDirectory;
  readonly summaries: { readonly add: string; readonly list: string; readonly revoke: string };
}

/** `<group> add <name>`, `<group> list` and `<group> revoke <name>` for one kind of principal. */
export function tokenCommands(spec: TokenCommandsSpec): Command {
  const { group, label } = spec;
  /** Opens the data folder for `work`; a bad name or token is printed, exit 1. */
  const withDirectory = (options: { readonly config?: string }, io: CliIo, work: (directory: PrincipalDirectory) => Promise<ExitCode>) =>
    withDataFolder(options, io, async (folder) => {
      try {
        return await work(spec.directory(folder));
      } catch (error) {
        if (error instanceof PrincipalNameError || error instanceof PrincipalTokenError) {
          io.stderr(`${error.message}\n`);
          return EXIT_CODES.failed;
        }
        throw error;
      }
    });

  const add = new Command('add')
    .summary(spec.summaries.add)
    .description(
      `${spec.summaries.add}\n\nPrints the new token once; the data folder keeps only its SHA-256. --token-from-env registers the token held in ` +
        "that environment variable instead (made elsewhere, e.g. kept in a deployment's Secret) and prints nothing of it; run again with the " +
        'same token, it changes nothing.',
    )
    .argument('<name>', `the ${label}'s name (${label}:<name>)`)
    .option('--token-from-env <VARIABLE>', 'register the token this environment variable holds instead of issuing one')
    .addOption(configOption())
    .action(
      action((io, name, options) =>
        withDirectory(options, io, async (directory) => {
          const variable = options.tokenFromEnv;
          if (variable !== undefined) {
            const given = process.env[variable];
            if (given === undefined || given === '') throw new UsageError(`--token-from-env: ${variable} is not set`);
            const already = await directory.registered(name, given.trim());
            if (already !== undefined) {
              io.stderr(`${already.actor} already holds this token (token id ${already.tokenId}); nothing changed\n`);
              return EXIT_CODES.ok;
            }
            const { record } = await directory.issue(name, new Date(), given.trim());
            io.stderr(`registered the token from ${variable} for ${record.actor} (token id ${record.tokenId})\n`);
            return EXIT_CODES.ok;
          }
          const { token, record } = await directory.issue(name);
          io.stdout(`${token}\n`);
          io.stderr(`issued a token for ${record.actor} (token id ${record.tokenId}); it is not shown again\n`);
          return EXIT_CODES.ok;
        }),
      ),
    );

  const list = new Command('list')
    .summary(spec.summaries.list)
    .description(`${spec.summaries.list} A token itself is never shown.`)
    .addOption(configOption())
    .action(
      action((io, options) =>
        withDirectory(options, io, async (directory) => {
          const records = await directory.list();
          if (records.length === 0) io.stdout(`no ${group} yet; add one with: oncegate ${group} add <name>\n`);
          for (const record of records) {
            io.stdout(`${record.actor}\t${record.tokenId}\tissued ${record.issuedAt}\t${record.revokedAt ? `revoked ${record.revokedAt}` : 'active'}\n`);
          }
          return EXIT_CODES.ok;
        }),
      ),
    );

  const revoke = new Command('revoke')
    .summary(spec.summaries.revoke)
    .description(`${spec.summaries.revoke} Exit 1 when the ${label} has no active token.`)
    .argument('<name>', `the ${label}'s name`)
    .addOption(configOption())
    .action(
      action((io, name, options) =>
        withDirectory(options, io, async (directory) => {
          const count = await directory.revoke(name);
          io.stdout(count === 0 ? `${label}:${name} has no active token\n` : `revoked ${count} token${count === 1 ? '' : 's'} of ${label}:${name}\n`);
          return count === 0 ? EXIT_CODES.failed : EXIT_CODES.ok;
        }),
      ),
    );

  return new Command(group).description(spec.description).addCommand(add).addCommand(list).addCommand(revoke);
}
