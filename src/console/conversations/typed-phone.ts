/** Spaces, dots, dashes and brackets people type in numbers; the rest is left for the server to judge (E.164). */
export const typedPhone = (value: string) => value.replace(/[\s().-]/g, "");
