package plumbing

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// FieldManager names the controllers in managedFields.
const FieldManager = "stagehand-controller"

// CreateOptions are the options of every create the controllers make.
func CreateOptions() metav1.CreateOptions { return metav1.CreateOptions{FieldManager: FieldManager} }

// UpdateOptions are the options of every update the controllers make.
func UpdateOptions() metav1.UpdateOptions { return metav1.UpdateOptions{FieldManager: FieldManager} }
