/** An API or network error, announced, with the server's own message (it names the field at fault). */
export function ErrorAlert({ error, context }: { error: unknown; context?: string }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  return (
    <p role="alert" className="error">
      {context ? `${context}: ${message}` : message}
    </p>
  );
}
