export {
  classFromAnnotations,
  definitionDigest,
  UPSTREAM_SECTION_SCHEMA,
  type UpstreamSection,
  type UpstreamToolAnnotations,
  type UpstreamToolDefinition,
} from './upstream-tool';
