import { useId, useLayoutEffect, useRef, useState, type ReactNode } from "react";

/**
 * A modal `<dialog>` as Pico styles it. Mounted only while open: it opens with showModal
 * (so the page behind is inert) and focuses its first field; Escape and "Close" ask the
 * parent to unmount it. Unmounting closes it first, so the browser returns focus to the
 * control that opened it.
 */
export function Modal({ title, onClose, children }: { title: string; onClose: () => void; children: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  const headingId = useId();
  useLayoutEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (!dialog.open) dialog.showModal();
    dialog.querySelector<HTMLElement>("input, select, textarea")?.focus();
    return () => dialog.close();
  }, []);
  return (
    <dialog
      ref={ref}
      aria-labelledby={headingId}
      // Escape: the parent decides (it unmounts the dialog), not the browser.
      onCancel={(event) => {
        event.preventDefault();
        onClose();
      }}
    >
      <article>
        <header>
          <button type="button" rel="prev" aria-label="Close" onClick={onClose} />
          <h2 id={headingId}>{title}</h2>
        </header>
        {children}
      </article>
    </dialog>
  );
}

/** A button that opens a dialog: `dialog` renders it (mounted only while open), given how to close it. */
export function DialogButton({ label, className, dialog }: { label: string; className?: string; dialog: (close: () => void) => ReactNode }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" className={className} onClick={() => setOpen(true)}>
        {label}
      </button>
      {open && dialog(() => setOpen(false))}
    </>
  );
}

/**
 * A form dialog's footer: Cancel and Save, outside the form where Pico styles a dialog's
 * footer (`form` ties Save to it); Save is busy while the change is sent.
 */
export function SaveFooter({ formId, pending, onCancel }: { formId: string; pending: boolean; onCancel: () => void }) {
  return (
    <footer>
      <button type="button" className="secondary" onClick={onCancel}>
        Cancel
      </button>
      <button type="submit" form={formId} aria-busy={pending} disabled={pending}>
        Save
      </button>
    </footer>
  );
}
