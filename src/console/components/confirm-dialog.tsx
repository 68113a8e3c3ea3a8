import type { ReactNode } from "react";
import { ErrorAlert } from "./error-alert";
import { Modal } from "./modal";

/** Asks before something that cannot be undone; "Cancel" comes before the action. */
export function ConfirmDialog({
  title,
  confirmLabel,
  busy,
  error,
  onConfirm,
  onClose,
  children,
}: {
  title: string;
  confirmLabel: string;
  busy: boolean;
  error: unknown;
  onConfirm: () => void;
  onClose: () => void;
  children: ReactNode;
}) {
  return (
    <Modal title={title} onClose={onClose}>
      {children}
      <ErrorAlert error={error} />
      <footer>
        <button type="button" className="secondary" onClick={onClose}>
          Cancel
        </button>
        <button type="button" aria-busy={busy} disabled={busy} onClick={onConfirm}>
          {confirmLabel}
        </button>
      </footer>
    </Modal>
  );
}
