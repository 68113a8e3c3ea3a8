import { useMutation } from "@tanstack/react-query";
import { useId, useState } from "react";
import { ConfirmDialog } from "../components/confirm-dialog";
import { ErrorAlert } from "../components/error-alert";
import { useTRPC } from "../trpc";
import { EditLineDialog } from "./edit-line-dialog";
import { useInvalidateLines, type Line } from "./line";

/** One line, a region named by the line's name, so that its buttons can be told from another line's. */
export function LineSection({ line, lines }: { line: Line; lines: Line[] }) {
  const trpc = useTRPC();
  const invalidateLines = useInvalidateLines();
  const update = useMutation(trpc.lines.update.mutationOptions({ onSuccess: invalidateLines }));
  const check = useMutation(trpc.lines.test.mutationOptions());
  const [dialog, setDialog] = useState<"edit" | "delete" | null>(null);
  const closeDialog = () => setDialog(null);
  const fromEnv = line.managed === "env";
  const fallback = line.fallback && lines.find((l) => l.id === line.fallback);
  return (
    <section aria-label={line.name}>
      <article>
        <header>
          <h3>
            {line.name} {line.default && <mark>Default</mark>} {!line.enabled && <mark>Disabled</mark>}
          </h3>
        </header>
        <p>
          <strong>Network:</strong> {line.network}
          <br />
          <strong>Address:</strong> {line.address ?? "—"}
          <br />
          <strong>State:</strong> {line.enabled ? "Enabled" : "Disabled"}
          <br />
          <strong>Fallback:</strong> {fallback ? fallback.name : "none"}
          <br />
          <strong>Managed by:</strong> {fromEnv ? "the environment" : "the API"}
        </p>
        <WebhookUrl line={line} />
        {fromEnv && (
          <p>
            <small>
              This line comes from the environment (<code>NETWORK</code> and its variables): change it there and restart. Here it can only be made the default
              line.
            </small>
          </p>
        )}
        <div role="group">
          <button type="button" className="secondary" aria-busy={check.isPending} disabled={check.isPending} onClick={() => check.mutate({ id: line.id })}>
            Test
          </button>
          {!line.default && (
            <button
              type="button"
              className="secondary"
              aria-busy={update.isPending}
              disabled={update.isPending}
              onClick={() => update.mutate({ id: line.id, default: true })}
            >
              Make default
            </button>
          )}
          {!fromEnv && (
            <>
              <button type="button" className="secondary" onClick={() => setDialog("edit")}>
                Edit
              </button>
              <button
                type="button"
                className="secondary"
                aria-busy={update.isPending}
                disabled={update.isPending}
                onClick={() => update.mutate({ id: line.id, enabled: !line.enabled })}
              >
                {line.enabled ? "Disable" : "Enable"}
              </button>
              <button type="button" className="secondary" onClick={() => setDialog("delete")}>
                Delete
              </button>
            </>
          )}
        </div>
        <p role="status">{check.data && `Test ${check.data.ok ? "passed" : "failed"}: ${check.data.detail}`}</p>
        <ErrorAlert error={update.error ?? check.error} />
      </article>
      {dialog === "edit" && <EditLineDialog line={line} lines={lines} onClose={closeDialog} />}
      {dialog === "delete" && <DeleteLineDialog line={line} onClose={closeDialog} />}
    </section>
  );
}

/** Where the network must post, with a button that copies it; loopback takes none, and without PUBLIC_URL there is none to give. */
function WebhookUrl({ line }: { line: Line }) {
  const inputId = useId();
  const [copied, setCopied] = useState<string | null>(null);
  if (!line.webhook_url) {
    return (
      <p>
        <strong>Webhook URL:</strong>{" "}
        {line.network === "loopback" ? "none: a loopback line takes inbound messages from the console or POST /webhooks/loopback" : "set PUBLIC_URL to get one"}
      </p>
    );
  }
  const url = line.webhook_url;
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(url);
      setCopied("Copied.");
    } catch {
      // No clipboard (a page not served over HTTPS): the URL is selected for the keyboard's copy.
      document.getElementById(inputId)?.focus();
      (document.getElementById(inputId) as HTMLInputElement | null)?.select();
      setCopied("Selected: press Ctrl+C (⌘C) to copy.");
    }
  };
  return (
    <>
      <label htmlFor={inputId}>Webhook URL</label>
      <fieldset role="group">
        <input id={inputId} readOnly value={url} onFocus={(e) => e.currentTarget.select()} />
        <input type="button" className="secondary" value="Copy" onClick={copy} />
      </fieldset>
      <p role="status">
        <small>{copied}</small>
      </p>
    </>
  );
}

function DeleteLineDialog({ line, onClose }: { line: Line; onClose: () => void }) {
  const trpc = useTRPC();
  const invalidateLines = useInvalidateLines();
  const remove = useMutation(trpc.lines.delete.mutationOptions({ onSuccess: invalidateLines }));
  return (
    <ConfirmDialog
      title="Delete this line?"
      confirmLabel="Delete line"
      busy={remove.isPending}
      error={remove.error}
      onConfirm={() => remove.mutate({ id: line.id }, { onSuccess: onClose })}
      onClose={onClose}
    >
      <p>
        Line <strong>{line.name}</strong> is deleted, and lines falling back to it lose their fallback. A line that carried messages cannot be deleted: disable
        it instead.
      </p>
    </ConfirmDialog>
  );
}
