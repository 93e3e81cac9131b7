export { ContractValidationError, formatIssue } from './contract-issue';
export type { ContractIssue } from './contract-issue';
export { checkContractFile, parseContractFile } from './parse-contract-file';
export { CREDENTIAL_REF_PATTERN, CREDENTIAL_REF_RULE, isCredentialRef } from './credential-ref';
export type { ContractCheck, ContractCheckOptions, PluginSectionCheck, PluginSectionTool } from './parse-contract-file';
export {
  APPROVAL_MODES,
  DEFAULT_LIMITS,
  DEFAULT_MARKER_STARTED_WAIT_MS,
  DEFAULT_REDELIVERY_GRACE_MS,
  DEFAULT_SSH_PORT,
  HTTP_METHODS,
  MAX_RESPONSE_BYTES,
  RESERVED_TOOL_NAMES,
  TOOL_NAME_PATTERN,
  pluginServerOf,
} from './tool-contract';
export type {
  ApprovalMode,
  ContractFile,
  ContractSource,
  CorrelationWindow,
  HttpMethod,
  HttpRequestTemplate,
  JsonSchemaObject,
  MarkerProtocol,
  PluginRequestTemplate,
  PreconditionValue,
  RequestTemplate,
  SshCommandTemplate,
  StatusQuery,
  ToolContract,
  ToolLimits,
} from './tool-contract';
export { parseDuration } from './duration';
export { scanTemplates } from './template';
export { reservedHeaderReason } from './request-headers';
export { CREDENTIAL_HEADERS, isCredentialName } from './secret-detection';
export { KEYWORDS as INPUT_SCHEMA_KEYWORDS } from './input-schema';
export { namesItself, SUPPORTED_FORMATS } from './schema-compiler';
export type { TemplateReference, TemplateScan } from './template';
export { fingerprintPolicyOf } from './fingerprint-policy';
export type { FingerprintPolicy } from './fingerprint-policy';
export { annotationsOf } from './annotations';
export type { ToolAnnotations } from './annotations';
export { argumentShapeViolations, assertValidArguments, InvalidArgumentsError, MAX_ARGUMENT_DEPTH, validateArguments } from './validate-arguments';
export type { ArgumentViolation } from './validate-arguments';
export { closestMatch } from './suggest';
export { DURATION_FORMS } from './duration';
export type { Duration, DurationText, NonEmptyString } from './yaml-values';
export type { ToolsFile } from './tools-file';
export { childPath, openYamlDocument, YamlContext } from './yaml-reader';
export { compileFileSchema, describeValue, fileSchemaAjv, SchemaCheckedYaml } from './schema-issues';
export type { SchemaMessages, Segment } from './schema-issues';
export { argumentsWithDefaults } from './argument-defaults';
export { singleToolContract } from './single-tool';
