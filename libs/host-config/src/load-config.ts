import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { DEFAULT_CONFIG, absolutePaths, applyEnvironment, parseGatewayConfig, type GatewayConfig } from './gateway-config';

/**
 * The configuration in force: defaults, then the file (`--config`, else `ONCEGATE_CONFIG`, else `./oncegate.yaml`
 * when present), then `ONCEGATE_*` variables; relative paths resolved against the working directory.
 */
export function loadGatewayConfig(options: { file?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {}): GatewayConfig {
  const env = options.env ?? process.env;
  const cwd = options.cwd ?? process.cwd();
  const named = options.file ?? env['ONCEGATE_CONFIG'];
  const file = named ?? (existsSync(resolve(cwd, 'oncegate.yaml')) ? 'oncegate.yaml' : undefined);
  const fromFile =
    file === undefined
      ? { ...DEFAULT_CONFIG, source: 'defaults' }
      : parseGatewayConfig(readFileSync(resolve(cwd, file), 'utf8'), file, DEFAULT_CONFIG, env);
  return absolutePaths(applyEnvironment(fromFile, env), cwd);
}
