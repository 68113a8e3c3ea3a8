/**
 * The error statuses routes answer, for their meta's `errorResponses` (src/api/routers/): ""
 * takes the status's usual description (src/api/openapi.ts), text says more. Every keyed
 * route; one with a JSON body.
 */
export const READ_ERRORS = { 400: "", 401: "", 403: "", 405: "", 429: "", 500: "" };
export const BODY_ERRORS = { ...READ_ERRORS, 413: "", 415: "" };
