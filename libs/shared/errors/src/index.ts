export {
  CatalogError,
  type CodeOf,
  defineErrors,
  type ErrorCatalog,
  type ErrorSpec,
  type ErrorSpecs,
  isErrorCatalog,
} from './define-errors.js';
export {
  type CodeErrorClass,
  codeErrorClass,
  type ErrorClass,
  type ErrorOptions,
  errorClass,
} from './error-class.js';
