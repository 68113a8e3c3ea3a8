/** A secret the server answers only once (a new API key, a webhook signing secret), with a note saying so. */
export function ShownOnce({ label, value, note, onDone }: { label: string; value: string; note: string; onDone: () => void }) {
  return (
    <article>
      <p role="status">
        {label}: <code>{value}</code>
      </p>
      <p>
        <small>{note}</small>
      </p>
      <button type="button" className="secondary" onClick={onDone}>
        Done
      </button>
    </article>
  );
}
