import type { DataFolder } from '@oncegate/service-host/host';
import { PrincipalNameError, PrincipalTokenError, type PrincipalDirectory } from '@oncegate/service-host/infrastructure/principal-directory';
import { EXIT_CODES, UsageError, type CliCommand, type CliIo, type ExitCode } from '@oncegate/service-host/cli-command';
import { parseCommandArgs, withDataFolder } from '../command-helpers';

/** What differs between the token commands of agents and of approvers. */
export interface TokenCommandsSpec {
  /** `agents`, `approvers`. */
  readonly group: string;
  /** `agent`, `approver`: the principal's kind, as in its actor (`agent:<name>`). */
  readonly label: string;
  readonly directory: (folder: DataFolder) => PrincipalDirectory;
  readonly summaries: { readonly add: string; readonly list: string; readonly revoke: string };
}

/** `<group> add <name>`, `<group> list` and `<group> revoke <name>` for one kind of principal. */
export function tokenCommands(spec: TokenCommandsSpec): { add: CliCommand; list: CliCommand; revoke: CliCommand } {
  const { group, label } = spec;
  const command = (
    name: string,
    summary: string,
    usage: string,
    run: (directory: PrincipalDirectory, positionals: string[], io: CliIo, options: { readonly tokenFromEnv?: string }) => Promise<ExitCode>,
    withOptions: Record<string, { type: 'string' }> = {},
  ): CliCommand => ({
    group,
    name,
    summary,
    usage,
    async run(args, io) {
      const parsed = parseCommandArgs(args, withOptions);
      const tokenFromEnv = typeof parsed.values['token-from-env'] === 'string' ? parsed.values['token-from-env'] : undefined;
      return withDataFolder(parsed, io, async (folder) => {
        try {
          return await run(spec.directory(folder), [...parsed.positionals], io, tokenFromEnv === undefined ? {} : { tokenFromEnv });
        } catch (error) {
          if (error instanceof PrincipalNameError || error instanceof PrincipalTokenError) {
            io.stderr(`${error.message}\n`);
            return EXIT_CODES.failed;
          }
          throw error;
        }
      });
    },
  });
  const oneName = (positionals: string[]): string => {
    const [name, ...rest] = positionals;
    if (name === undefined || rest.length > 0) throw new UsageError(`name exactly one ${label}`);
    return name;
  };

  return {
    add: command(
      'add',
      spec.summaries.add,
      `Usage: oncegate ${group} add <name> [--token-from-env <VARIABLE>] [--config <file>]\n\nPrints the new token once; the data folder keeps only its SHA-256.\n` +
        `--token-from-env registers the token held in that environment variable instead (made elsewhere, e.g. kept in a\n` +
        `deployment's Secret) and prints nothing of it; run again with the same token, it changes nothing.`,
      async (directory, positionals, io, options) => {
        const name = oneName(positionals);
        if (options.tokenFromEnv !== undefined) {
          const given = process.env[options.tokenFromEnv];
          if (given === undefined || given === '') throw new UsageError(`--token-from-env: ${options.tokenFromEnv} is not set`);
          const already = await directory.registered(name, given.trim());
          if (already !== undefined) {
            io.stderr(`${already.actor} already holds this token (token id ${already.tokenId}); nothing changed\n`);
            return EXIT_CODES.ok;
          }
          const { record } = await directory.issue(name, new Date(), given.trim());
          io.stderr(`registered the token from ${options.tokenFromEnv} for ${record.actor} (token id ${record.tokenId})\n`);
          return EXIT_CODES.ok;
        }
        const { token, record } = await directory.issue(name);
        io.stdout(`${token}\n`);
        io.stderr(`issued a token for ${record.actor} (token id ${record.tokenId}); it is not shown again\n`);
        return EXIT_CODES.ok;
      },
      { 'token-from-env': { type: 'string' } },
    ),
    list: command('list', spec.summaries.list, `Usage: oncegate ${group} list [--config <file>]`, async (directory, positionals, io) => {
      if (positionals.length > 0) throw new UsageError('takes no arguments');
      const records = await directory.list();
      if (records.length === 0) io.stdout(`no ${group} yet; add one with: oncegate ${group} add <name>\n`);
      for (const record of records) {
        io.stdout(`${record.actor}\t${record.tokenId}\tissued ${record.issuedAt}\t${record.revokedAt ? `revoked ${record.revokedAt}` : 'active'}\n`);
      }
      return EXIT_CODES.ok;
    }),
    revoke: command(
      'revoke',
      spec.summaries.revoke,
      `Usage: oncegate ${group} revoke <name> [--config <file>]`,
      async (directory, positionals, io) => {
        const name = oneName(positionals);
        const count = await directory.revoke(name);
        io.stdout(count === 0 ? `${label}:${name} has no active token\n` : `revoked ${count} token${count === 1 ? '' : 's'} of ${label}:${name}\n`);
        return count === 0 ? EXIT_CODES.failed : EXIT_CODES.ok;
      },
    ),
  };
}
