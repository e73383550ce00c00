export {
  CatalogError,
  type CodeOf,
  defineErrors,
  type ErrorCatalog,
  type ErrorSpec,
  type ErrorSpecs,
  isErrorCatalog,
} from './define-errors.js';
